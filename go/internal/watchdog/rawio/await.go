package rawio

// An awaited answer: a question written elsewhere (a lane's request pipe)
// inside a wait begun on the descriptor its answer comes on (the lane's
// response pipe), issue 29.
//
// Why: a Read right after the question finds the descriptor empty whenever
// the answer has not come yet, a read(2) answering EAGAIN before the wait;
// a wait begun only after the question could miss the answer (the runtime's
// poller forgets, at the start of a wait, readiness it learned before). Inside
// AwaitAfter the wait is begun first, so the answer's arrival is news to the
// poller whenever it comes, and the asker decides whether to look at once.

// await is an FD's state while AwaitAfter runs.
type await struct {
	ask   func() (lookNow bool, err error)
	asked bool
	err   error                 // ask's
	cb    func(fd uintptr) bool // f.awaited, bound once
}

// Look is what the first Read after WatchLook found.
type Look uint8

const (
	LookNone    Look = iota // no such Read yet, or no WatchLook
	lookPending             // WatchLook called; no Read yet
	LookFound               // its read(2) found bytes, or the end
	LookEmpty               // its read(2) found nothing and waited
)

// WatchLook has the next Read record what its first read(2) finds, for
// TakeLook: a caller that looks at once after a question (AwaitAfter's
// lookNow, or a plain write) learns whether the answer was there.
func (f *FD) WatchLook() { f.look = lookPending }

// TakeLook returns what the first Read after the last WatchLook found,
// once (LookNone after, and before that Read).
func (f *FD) TakeLook() Look {
	l := f.look
	f.look = LookNone
	if l == lookPending {
		return LookNone
	}
	return l
}

// CanAwait reports whether AwaitAfter waits (else it only asks).
func (f *FD) CanAwait() bool { return f.plain == nil }

// AwaitAfter calls ask inside a wait begun on the descriptor's readability,
// and returns ask's error. When ask succeeds and reports that the answer may
// be there already (lookNow), AwaitAfter returns at once; otherwise it
// returns once the descriptor is readable, or its read deadline passes, or
// it is closed: the Read that follows then finds the answer, or that error,
// without a read(2) that finds nothing. ask must not read the descriptor.
// On a descriptor that cannot wait (CanAwait), AwaitAfter only calls ask.
//
// The descriptor must hold nothing unread when AwaitAfter begins: bytes that
// came before are news the poller may have delivered already, and forgets
// as the wait begins, so the wait would last until the next arrival (or the
// deadline, or the close). A lane's response pipe is empty then unless its
// worker wrote unsolicited output, which the pool's check at acquire looks
// for (PROTOCOL.md §9.6); written later still, the worker's answer ends the
// wait, and the Read that follows finds both.
func (f *FD) AwaitAfter(ask func() (lookNow bool, err error)) error {
	if f.plain != nil {
		_, err := ask()
		return err
	}
	f.aw.ask, f.aw.asked, f.aw.err = ask, false, nil
	f.rc.Read(f.aw.cb) // its error is the next Read's too
	asked, err := f.aw.asked, f.aw.err
	f.aw.ask, f.aw.err = nil, nil
	if !asked {
		// The wait could not begin (a deadline passed, or the descriptor
		// closed): the question is asked all the same, as it would have
		// been before a Read.
		_, err = ask()
	}
	return err
}

// awaited is the poller's callback for AwaitAfter: at its first call the
// wait has just begun, and the question is asked; at a later one the
// descriptor became readable.
func (f *FD) awaited(uintptr) bool {
	if f.aw.asked {
		return true
	}
	f.aw.asked = true
	lookNow, err := f.aw.ask()
	f.aw.err = err
	return err != nil || lookNow
}
