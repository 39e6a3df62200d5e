package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// telemetryWork: accounts own users and service groups; memberships join
// users to service groups.
type telemetryWork struct {
	accounts []int
	users    map[int]int // user -> account
	groups   map[int]int // group -> account
	members  map[[2]int]bool
	nextID   int
}

func newTelemetryWork(q func(string) [][]string) *telemetryWork {
	w := &telemetryWork{users: map[int]int{}, groups: map[int]int{}, members: map[[2]int]bool{}, nextID: 100000}
	for _, r := range q("SELECT id FROM accounts ORDER BY id") {
		w.accounts = append(w.accounts, atoi(r[0]))
	}
	for _, r := range q("SELECT id, account_id FROM users ORDER BY id") {
		w.users[atoi(r[0])] = atoi(r[1])
	}
	for _, r := range q("SELECT id, account_id FROM service_groups ORDER BY id") {
		w.groups[atoi(r[0])] = atoi(r[1])
	}
	for _, r := range q("SELECT user_id, service_group_id FROM user_service_groups") {
		w.members[[2]int{atoi(r[0]), atoi(r[1])}] = true
	}
	return w
}

func intKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (w *telemetryWork) memberList() [][2]int {
	out := make([][2]int, 0, len(w.members))
	for k := range w.members {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	return out
}

func (w *telemetryWork) next(rng *rand.Rand) []string {
	var out []string
	for n := 1 + rng.IntN(3); n > 0; n-- {
		w.nextID++
		id := w.nextID
		users, groups, members := intKeys(w.users), intKeys(w.groups), w.memberList()
		switch rng.IntN(10) {
		case 0:
			w.accounts = append(w.accounts, id)
			out = append(out, fmt.Sprintf("INSERT INTO accounts (id, name, plan, created_at) VALUES (%d, 'Account %d', 'free', %s)", id, id, ts(rng)))
		case 1:
			out = append(out, fmt.Sprintf("UPDATE accounts SET plan = %s, name = 'Renamed %d' WHERE id = %d", lit(pick(rng, []string{"free", "pro", "enterprise"})), id, pick(rng, w.accounts)))
		case 2:
			a := pick(rng, w.accounts)
			w.users[id] = a
			out = append(out, fmt.Sprintf("INSERT INTO users (id, account_id, first_name, last_name, email, role, created_at) VALUES (%d, %d, 'First%d', 'Last', 'u%d@example.com', 'member', %s)", id, a, id, id, ts(rng)))
		case 3: // a user moves to another account: its item changes key
			u, a := pick(rng, users), pick(rng, w.accounts)
			w.users[u] = a
			out = append(out, fmt.Sprintf("UPDATE users SET account_id = %d, role = 'moved' WHERE id = %d", a, u))
		case 4:
			u := pick(rng, users)
			out = append(out, fmt.Sprintf("UPDATE users SET email = 'e%d@example.com', last_name = 'L%d' WHERE id = %d", id, id, u))
		case 5: // a user deleted with its memberships
			u := pick(rng, users)
			out = append(out, fmt.Sprintf("DELETE FROM user_service_groups WHERE user_id = %d", u))
			for m := range w.members {
				if m[0] == u {
					delete(w.members, m)
				}
			}
			delete(w.users, u)
			out = append(out, fmt.Sprintf("DELETE FROM users WHERE id = %d", u))
		case 6:
			a := pick(rng, w.accounts)
			w.groups[id] = a
			out = append(out, fmt.Sprintf("INSERT INTO service_groups (id, account_id, name, created_at) VALUES (%d, %d, 'Group %d', %s)", id, a, id, ts(rng)))
		case 7:
			m := [2]int{pick(rng, users), pick(rng, groups)}
			if w.members[m] {
				continue
			}
			w.members[m] = true
			out = append(out, fmt.Sprintf("INSERT INTO user_service_groups (user_id, service_group_id, granted_at) VALUES (%d, %d, %s)", m[0], m[1], ts(rng)))
		case 8: // a membership's key changes
			if len(members) == 0 {
				continue
			}
			m := pick(rng, members)
			g := pick(rng, groups)
			if w.members[[2]int{m[0], g}] {
				continue
			}
			delete(w.members, m)
			w.members[[2]int{m[0], g}] = true
			out = append(out, fmt.Sprintf("UPDATE user_service_groups SET service_group_id = %d WHERE user_id = %d AND service_group_id = %d", g, m[0], m[1]))
		default:
			if len(members) == 0 {
				continue
			}
			m := pick(rng, members)
			delete(w.members, m)
			out = append(out, fmt.Sprintf("DELETE FROM user_service_groups WHERE user_id = %d AND service_group_id = %d", m[0], m[1]))
		}
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("UPDATE accounts SET plan = 'pro' WHERE id = %d", pick(rng, w.accounts)))
	}
	return out
}

// photoWork: photos of several users, migrated one tenant (user 7) at a
// time: rows enter and leave the where: filter when they change user.
type photoWork struct {
	photos map[[2]int]bool
	users  []int
	nextID int
}

const photoTenant = 7

func newPhotoWork(q func(string) [][]string) *photoWork {
	w := &photoWork{photos: map[[2]int]bool{}, nextID: 100000}
	seen := map[int]bool{}
	for _, r := range q("SELECT user_id, photo_id FROM photos") {
		k := [2]int{atoi(r[0]), atoi(r[1])}
		w.photos[k] = true
		if !seen[k[0]] {
			seen[k[0]] = true
			w.users = append(w.users, k[0])
		}
	}
	slices.Sort(w.users)
	return w
}

func (w *photoWork) user(rng *rand.Rand) int {
	if rng.IntN(2) == 0 {
		return photoTenant
	}
	return pick(rng, w.users)
}

func (w *photoWork) next(rng *rand.Rand) []string {
	var out []string
	list := make([][2]int, 0, len(w.photos))
	for k := range w.photos {
		list = append(list, k)
	}
	slices.SortFunc(list, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	for n := 1 + rng.IntN(2); n > 0; n-- {
		w.nextID++
		id := w.nextID
		p := pick(rng, list)
		if rng.IntN(2) == 0 { // bias toward the tenant's photos
			for _, k := range list {
				if k[0] == photoTenant && rng.IntN(4) == 0 {
					p = k
					break
				}
			}
		}
		switch rng.IntN(5) {
		case 0:
			k := [2]int{w.user(rng), id}
			w.photos[k] = true
			out = append(out, fmt.Sprintf("INSERT INTO photos (user_id, photo_id, url, caption, width, height, taken_at) VALUES (%d, %d, 'https://img.example/%d.jpg', 'new %d', 800, 600, %s)", k[0], k[1], id, id, ts(rng)))
		case 1:
			caption := "NULL"
			if rng.IntN(3) > 0 {
				caption = fmt.Sprintf("'caption %d'", id)
			}
			out = append(out, fmt.Sprintf("UPDATE photos SET caption = %s, width = %d WHERE user_id = %d AND photo_id = %d", caption, 100+rng.IntN(2000), p[0], p[1]))
		case 2: // moves between users: enters or leaves the tenant's filter
			u := w.user(rng)
			if u == p[0] {
				u = pick(rng, w.users)
			}
			if w.photos[[2]int{u, p[1]}] {
				continue
			}
			delete(w.photos, p)
			w.photos[[2]int{u, p[1]}] = true
			out = append(out, fmt.Sprintf("UPDATE photos SET user_id = %d WHERE user_id = %d AND photo_id = %d", u, p[0], p[1]))
		case 3:
			delete(w.photos, p)
			out = append(out, fmt.Sprintf("DELETE FROM photos WHERE user_id = %d AND photo_id = %d", p[0], p[1]))
		default: // primary-key change within the user
			k := [2]int{p[0], id}
			delete(w.photos, p)
			w.photos[k] = true
			out = append(out, fmt.Sprintf("UPDATE photos SET photo_id = %d WHERE user_id = %d AND photo_id = %d", id, p[0], p[1]))
		}
	}
	if len(out) == 0 {
		out = append(out, "UPDATE photos SET width = width + 1 WHERE user_id = 7")
	}
	return out
}

// alleycatWork: classes own races; a race's results nest per-second
// readings that split over several items.
type alleycatWork struct {
	classes []int
	racers  []int
	races   map[int]int    // race -> class
	results map[[2]int]int // (race, racer) -> readings (seconds 1..n)
	nextID  int
}

func newAlleycatWork(q func(string) [][]string) *alleycatWork {
	w := &alleycatWork{races: map[int]int{}, results: map[[2]int]int{}, nextID: 1000}
	for _, r := range q("SELECT id FROM classes ORDER BY id") {
		w.classes = append(w.classes, atoi(r[0]))
	}
	for _, r := range q("SELECT id FROM racers ORDER BY id") {
		w.racers = append(w.racers, atoi(r[0]))
	}
	for _, r := range q("SELECT id, class_id FROM races") {
		w.races[atoi(r[0])] = atoi(r[1])
	}
	for _, r := range q("SELECT r.race_id, r.racer_id, COALESCE(MAX(x.second), 0) FROM race_results r LEFT JOIN race_readings x ON x.race_id = r.race_id AND x.racer_id = r.racer_id GROUP BY r.race_id, r.racer_id") {
		w.results[[2]int{atoi(r[0]), atoi(r[1])}] = atoi(r[2])
	}
	return w
}

func (w *alleycatWork) resultList() [][2]int {
	out := make([][2]int, 0, len(w.results))
	for k := range w.results {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	return out
}

// readings inserts seconds from..to of a result's readings in one statement.
func readings(rng *rand.Rand, k [2]int, from, to int) string {
	vals := make([]string, 0, to-from+1)
	for s := from; s <= to; s++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, %d, %d, %d, %d)", k[0], k[1], s, 60+rng.IntN(60), 10+rng.IntN(20), 100+rng.IntN(400)))
	}
	return "INSERT INTO race_readings (race_id, racer_id, second, cadence, resistance, output) VALUES " + joinComma(vals)
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

func (w *alleycatWork) next(rng *rand.Rand) []string {
	var out []string
	results := w.resultList()
	races := intKeys(w.races)
	w.nextID++
	id := w.nextID
	switch rng.IntN(9) {
	case 0: // a result grows by minutes of readings: more split parts
		k := pick(rng, results)
		n := w.results[k]
		add := 60 + rng.IntN(600)
		w.results[k] = n + add
		out = append(out, readings(rng, k, n+1, n+add))
	case 1: // a result loses its later readings: parts no longer needed go
		k := pick(rng, results)
		keep := rng.IntN(w.results[k] + 1)
		w.results[k] = keep
		out = append(out, fmt.Sprintf("DELETE FROM race_readings WHERE race_id = %d AND racer_id = %d AND second > %d", k[0], k[1], keep))
	case 2:
		k := pick(rng, results)
		out = append(out, fmt.Sprintf("UPDATE race_readings SET output = output + 1 WHERE race_id = %d AND racer_id = %d AND second %% 7 = 3", k[0], k[1]))
	case 3:
		k := pick(rng, results)
		out = append(out, fmt.Sprintf("UPDATE race_results SET total_output = %d, avg_cadence = %d.5 WHERE race_id = %d AND racer_id = %d", 1000+rng.IntN(100000), 60+rng.IntN(40), k[0], k[1]))
	case 4: // a new result with its readings
		k := [2]int{pick(rng, races), pick(rng, w.racers)}
		if _, ok := w.results[k]; ok {
			return []string{fmt.Sprintf("UPDATE racers SET city = 'City %d' WHERE id = %d", id, k[1])}
		}
		n := rng.IntN(900)
		w.results[k] = n
		out = append(out, fmt.Sprintf("INSERT INTO race_results (race_id, racer_id, total_output, avg_cadence, finished_at) VALUES (%d, %d, %d, 80.25, %s)", k[0], k[1], rng.IntN(50000), ts(rng)))
		if n > 0 {
			out = append(out, readings(rng, k, 1, n))
		}
	case 5: // a result deleted with its readings
		k := pick(rng, results)
		delete(w.results, k)
		out = append(out, fmt.Sprintf("DELETE FROM race_readings WHERE race_id = %d AND racer_id = %d", k[0], k[1]))
		out = append(out, fmt.Sprintf("DELETE FROM race_results WHERE race_id = %d AND racer_id = %d", k[0], k[1]))
	case 6: // a race moves to another class: its item changes key
		r := pick(rng, races)
		c := pick(rng, w.classes)
		w.races[r] = c
		out = append(out, fmt.Sprintf("UPDATE races SET class_id = %d WHERE id = %d", c, r))
	case 7:
		w.races[id] = pick(rng, w.classes)
		out = append(out, fmt.Sprintf("INSERT INTO races (id, class_id, started_at, duration_seconds) VALUES (%d, %d, %s, 2700)", id, w.races[id], ts(rng)))
	default:
		out = append(out, fmt.Sprintf("UPDATE classes SET name = 'Class %d', instructor = 'Coach %d' WHERE id = %d", id, id, pick(rng, w.classes)))
		w.racers = append(w.racers, id)
		out = append(out, fmt.Sprintf("INSERT INTO racers (id, name, city) VALUES (%d, 'Racer %d', 'Town')", id, id))
	}
	return out
}
