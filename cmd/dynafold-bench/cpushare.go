package main

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuShare samples, while a run lasts, the CPU the source's server spends
// on this machine: PostgreSQL's backends and WAL senders (processes
// titled "postgres: …", which come and go with sync's connections) or
// the MariaDB/MySQL server process. With sync's own CPU and the no-op
// endpoint's, it says what the run cost the machine as a whole, which on
// a machine the three share bounds the rate more than any one of them.
// A backend's last tenth of a second before it exits can be missed.
type cpuShare struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	// first and last are each process's CPU seconds when first and last
	// seen; primed is set after the first sample: a process seen first
	// after it began during the run, and counts from zero.
	first, last map[int]float64
	primed      bool
}

// sampleServerCPU starts sampling the source servers' processes every
// 100 ms.
func sampleServerCPU() *cpuShare {
	c := &cpuShare{stop: make(chan struct{}), done: make(chan struct{}), first: map[int]float64{}, last: map[int]float64{}}
	go func() {
		defer close(c.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			c.sample()
			select {
			case <-t.C:
			case <-c.stop:
				c.sample()
				return
			}
		}
	}()
	return c
}

func (c *cpuShare) sample() {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !isSourceServer(pid) {
			continue
		}
		cpu, err := procCPU(pid)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if _, seen := c.first[pid]; !seen {
			c.first[pid] = 0
			if !c.primed {
				c.first[pid] = cpu
			}
		}
		c.last[pid] = cpu
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.primed = true
	c.mu.Unlock()
}

// isSourceServer reports whether pid is a PostgreSQL backend or WAL sender
// or a MariaDB/MySQL server.
func isSourceServer(pid int) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	if strings.HasPrefix(string(cmdline), "postgres: ") {
		return true
	}
	exe := strings.SplitN(string(cmdline), "\x00", 2)[0]
	base := exe[strings.LastIndexByte(exe, '/')+1:]
	return base == "mariadbd" || base == "mysqld"
}

// seconds stops sampling and returns the CPU seconds the servers spent.
func (c *cpuShare) seconds() float64 {
	close(c.stop)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0.0
	for pid, last := range c.last {
		total += last - c.first[pid]
	}
	return total
}
