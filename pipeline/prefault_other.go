//go:build !linux

package pipeline

import "sync/atomic"

func prefault([]atomic.Uint64) {}
