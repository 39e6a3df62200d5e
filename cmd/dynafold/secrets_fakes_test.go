package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
)

// The servers TestSecrets runs against besides the real ones: a
// PostgreSQL that refuses the password and quotes it back, and an AWS
// endpoint that refuses the credentials and quotes them back.

// fakePostgres listens for PostgreSQL connections, asks for the password
// in clear text and refuses it, quoting it back in the error as a
// careless server or proxy might: the message of a driver error must be
// redacted too. It returns the port.
func fakePostgres(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go refusePassword(c)
		}
	}()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func refusePassword(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	be := pgproto3.NewBackend(c, c)
	msg, err := be.ReceiveStartupMessage()
	for err == nil {
		if _, ok := msg.(*pgproto3.SSLRequest); !ok {
			break
		}
		if _, err = c.Write([]byte("N")); err == nil {
			msg, err = be.ReceiveStartupMessage()
		}
	}
	startup, ok := msg.(*pgproto3.StartupMessage)
	if err != nil || !ok {
		return
	}
	be.Send(&pgproto3.AuthenticationCleartextPassword{})
	if be.Flush() != nil {
		return
	}
	if be.SetAuthType(pgproto3.AuthTypeCleartextPassword) != nil {
		return
	}
	m, err := be.Receive()
	if err != nil {
		return
	}
	pw, _ := m.(*pgproto3.PasswordMessage)
	got := ""
	if pw != nil {
		got = pw.Password
	}
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01",
		Message: fmt.Sprintf("password authentication failed for user %q (password %q)", startup.Parameters["user"], got)})
	_ = be.Flush()
}

// rejectingEndpoint answers every request as AWS does a request signed
// with unknown credentials: DynamoDB's UnrecognizedClientException, S3's
// InvalidAccessKeyId. Its message quotes back the credentials the request
// was signed with, and others of the shapes AWS credentials have (echo),
// as a careless proxy or emulator might, so that the error text an
// endpoint sends is checked for redaction. seen counts the requests
// signed with creds' access key and session token.
func rejectingEndpoint(t *testing.T, creds awsSecrets, echo string) (endpoint string, seen func() int) {
	var mu sync.Mutex
	n := 0
	message := "The security token included in the request is invalid: " + echo
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if strings.Contains(r.Header.Get("Authorization"), "Credential="+creds.keyID+"/") && r.Header.Get("X-Amz-Security-Token") == creds.token {
			mu.Lock()
			n++
			mu.Unlock()
		}
		if r.Header.Get("X-Amz-Target") == "" { // S3
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>%s</Message><RequestId>REJECTED</RequestId></Error>`, message)
			return
		}
		body, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#UnrecognizedClientException", "message": message})
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-RequestId", "REJECTED")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}
