//go:build !linux

package fakecu

// ThreadID returns the calling OS thread's id, for Fake.CheckThread; ok is false where the
// platform offers none.
func ThreadID() (id int64, ok bool) { return 0, false }
