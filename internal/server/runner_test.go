package server

import (
	"testing"
	"time"
)

// TestFIFOOrder grants the lock in arrival order.
func TestFIFOOrder(t *testing.T) {
	var f fifo
	if f.enqueue() != nil {
		t.Fatal("a free lock queued its first caller")
	}
	a, b := f.enqueue(), f.enqueue()
	f.unlock()
	select {
	case <-a:
	case <-time.After(5 * time.Second):
		t.Fatal("the first waiter did not get the lock")
	}
	select {
	case <-b:
		t.Fatal("the second waiter got the lock while the first holds it")
	default:
	}
	f.unlock()
	<-b
	f.unlock()
	if !f.tryLock() {
		t.Fatal("the lock is still held after every holder unlocked")
	}
}

// TestFIFOAbandon withdraws a waiter that gives up: a queued ticket leaves
// the queue, and a ticket the lock was already handed to passes it on, so
// a seal whose client went away never keeps a session's queue locked.
func TestFIFOAbandon(t *testing.T) {
	t.Run("queued", func(t *testing.T) {
		var f fifo
		f.lock()
		gone, next := f.enqueue(), f.enqueue()
		f.abandon(gone)
		f.unlock()
		select {
		case <-next:
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter behind an abandoned ticket did not get the lock")
		}
		select {
		case <-gone:
			t.Fatal("an abandoned ticket was handed the lock")
		default:
		}
	})
	t.Run("handed over", func(t *testing.T) {
		var f fifo
		f.lock()
		late := f.enqueue()
		f.unlock() // the lock is now late's
		<-late
		f.abandon(late)
		if !f.tryLock() {
			t.Fatal("an abandoned ticket kept the lock it was handed")
		}
	})
}
