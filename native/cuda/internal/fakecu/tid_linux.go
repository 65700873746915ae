//go:build linux

package fakecu

import "syscall"

// ThreadID returns the calling OS thread's id, for Fake.CheckThread; ok is false where the
// platform offers none.
func ThreadID() (id int64, ok bool) { return int64(syscall.Gettid()), true }
