package ddbnoop

import (
	"encoding/json"
	"net/http"
	"sort"
)

// Control-plane and read operations. None of these are on the hot path, so
// they use encoding/json and allocate freely.

type tableNameInput struct {
	TableName string
}

// decode unmarshals a request body, answering SerializationException itself
// on failure.
func decode(w http.ResponseWriter, body []byte, v any) bool {
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, &apiError{Type: errTypeSerialization, Message: err.Error()})
		return false
	}
	return true
}

func (s *Server) createTable(w http.ResponseWriter, body []byte) {
	var in createTableInput
	if !decode(w, body, &in) {
		return
	}
	t, err := newTable(in, s.now())
	if err == nil {
		err = s.tables.add(t)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	// Tables are ACTIVE at once: there is nothing to provision, and callers
	// polling with a TableExists waiter return on the first DescribeTable.
	writeJSON(w, map[string]any{"TableDescription": t.describe("ACTIVE")})
}

// table decodes a {"TableName": ...} request and finds the table, answering
// the error itself if it cannot.
func (s *Server) table(w http.ResponseWriter, body []byte) *table {
	var in tableNameInput
	if !decode(w, body, &in) {
		return nil
	}
	t := s.tables.lookup([]byte(in.TableName))
	if t == nil {
		writeError(w, tableNotFound(in.TableName))
	}
	return t
}

func (s *Server) describeTable(w http.ResponseWriter, body []byte) {
	if t := s.table(w, body); t != nil {
		writeJSON(w, map[string]any{"Table": t.describe("ACTIVE")})
	}
}

func (s *Server) deleteTable(w http.ResponseWriter, body []byte) {
	var in tableNameInput
	if !decode(w, body, &in) {
		return
	}
	t := s.tables.remove(in.TableName)
	if t == nil {
		writeError(w, tableNotFound(in.TableName))
		return
	}
	s.capacity.forgetTable(in.TableName)
	writeJSON(w, map[string]any{"TableDescription": t.describe("DELETING")})
}

func (s *Server) listTables(w http.ResponseWriter, body []byte) {
	var in struct {
		ExclusiveStartTableName string
		Limit                   int
	}
	if !decode(w, body, &in) {
		return
	}
	names := s.tables.names()
	if in.ExclusiveStartTableName != "" {
		names = names[sort.Search(len(names), func(i int) bool { return names[i] > in.ExclusiveStartTableName }):]
	}
	out := map[string]any{}
	if in.Limit > 0 && len(names) > in.Limit {
		names = names[:in.Limit]
		out["LastEvaluatedTableName"] = names[len(names)-1]
	}
	out["TableNames"] = names
	writeJSON(w, out)
}

type ttlSpecification struct {
	AttributeName string
	Enabled       bool
}

func (s *Server) updateTimeToLive(w http.ResponseWriter, body []byte) {
	var in struct {
		TableName               string
		TimeToLiveSpecification ttlSpecification
	}
	if !decode(w, body, &in) {
		return
	}
	t := s.tables.lookup([]byte(in.TableName))
	if t == nil {
		writeError(w, tableNotFound(in.TableName))
		return
	}
	if in.TimeToLiveSpecification.AttributeName == "" {
		writeError(w, validationError("TimeToLiveSpecification.AttributeName must be set"))
		return
	}
	s.tables.mu.Lock()
	t.ttlAttr, t.ttlOn = in.TimeToLiveSpecification.AttributeName, in.TimeToLiveSpecification.Enabled
	s.tables.mu.Unlock()
	writeJSON(w, map[string]any{"TimeToLiveSpecification": in.TimeToLiveSpecification})
}

func (s *Server) describeTimeToLive(w http.ResponseWriter, body []byte) {
	t := s.table(w, body)
	if t == nil {
		return
	}
	s.tables.mu.RLock()
	attr, on := t.ttlAttr, t.ttlOn
	s.tables.mu.RUnlock()
	desc := map[string]string{"TimeToLiveStatus": "DISABLED"}
	if on {
		desc["TimeToLiveStatus"] = "ENABLED"
	}
	if attr != "" {
		desc["AttributeName"] = attr
	}
	writeJSON(w, map[string]any{"TimeToLiveDescription": desc})
}

// emptyRead answers Query and Scan: the server stores nothing, so every read
// is empty.
func (s *Server) emptyRead(w http.ResponseWriter, body []byte) {
	if s.table(w, body) != nil {
		writeJSONBody(w, http.StatusOK, []byte(`{"Items":[],"Count":0,"ScannedCount":0}`))
	}
}

func (s *Server) batchGetItem(w http.ResponseWriter, body []byte) {
	var in struct {
		RequestItems map[string]json.RawMessage
	}
	if !decode(w, body, &in) {
		return
	}
	if len(in.RequestItems) == 0 {
		writeError(w, validationError("The requestItems parameter is required for BatchGetItem"))
		return
	}
	responses := make(map[string][]any, len(in.RequestItems))
	for name := range in.RequestItems {
		if s.tables.lookup([]byte(name)) == nil {
			writeError(w, notFoundError("Requested resource not found"))
			return
		}
		responses[name] = []any{}
	}
	writeJSON(w, map[string]any{"Responses": responses, "UnprocessedKeys": map[string]any{}})
}
