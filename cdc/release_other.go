//go:build !linux

package cdc

// releaseMapping is a no-op off Linux.
func releaseMapping(addr, size uintptr) {}
