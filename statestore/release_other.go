//go:build !linux

package statestore

// releaseMapping is a no-op off Linux.
func releaseMapping(addr, size uintptr) {}
