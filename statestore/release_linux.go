package statestore

import "syscall"

// releaseMapping drops the resident pages of the file mapping at addr
// (MADV_DONTNEED); the file's content is unchanged and read again from
// the page cache when next touched. An error changes nothing but memory.
func releaseMapping(addr, size uintptr) {
	if addr == 0 || size == 0 {
		return
	}
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, addr, size, syscall.MADV_DONTNEED)
}
