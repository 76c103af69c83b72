//go:build dicthooks

package dict

import "unsafe"

// The crash tests' view of page clearing (clearPageInShard) in a helper
// process: its shards record each step of a clearing in memory that the
// helper maps from its ack file, so that every step taken before a SIGKILL
// is in the file afterwards, and the test can tell a helper killed inside
// a clearing. It exists only in test builds with the dicthooks tag.

// ClearRecSize is the bytes that one recorded step takes.
const ClearRecSize = int(unsafe.Sizeof(clearStep{}))

// clearWhatOff is the offset of a step's letter in its record.
const clearWhatOff = int(unsafe.Offsetof(clearStep{}.what))

// ClearLog is the record of a Dict's page clearings, in memory the caller
// owns.
type ClearLog struct {
	steps *[]clearStep // what every shard appends to
	base  []clearStep  // over mem, length 0
	mem   []byte
}

// LogClears makes every shard of d record the steps of its page clearings
// in mem, from its start: len(mem)/ClearRecSize steps between two calls
// of Take (the steps past those go to the heap, where Take still counts
// them). mem must be 8-byte aligned, a mapping's start, and zero. The
// records hold Go pointers (the keys) that the garbage collector does not
// see: only ClearSteps and Take read them, and they read only the letters.
func LogClears(d *Dict, mem []byte) *ClearLog {
	n := len(mem) / ClearRecSize
	l := &ClearLog{mem: mem[:n*ClearRecSize]}
	if n > 0 {
		l.base = unsafe.Slice((*clearStep)(unsafe.Pointer(&mem[0])), n)[:0]
	}
	s := l.base
	l.steps = &s
	for i := range d.shards {
		d.shards[i].clears = l.steps
	}
	return l
}

// Take appends to dst the letters of the steps recorded since the last
// Take (StepMoved, StepEvicted, StepExpired, StepCleared, in order) and
// empties the record. It empties the first record before the others, so
// that a process killed inside Take leaves a record that reads as empty.
func (l *ClearLog) Take(dst []byte) []byte {
	steps := *l.steps
	for _, st := range steps {
		dst = append(dst, st.what)
	}
	if n := min(len(steps), cap(l.base)); n > 0 {
		l.mem[clearWhatOff] = 0
		clear(l.mem[ClearRecSize : n*ClearRecSize])
		clear(l.mem[:ClearRecSize])
	}
	*l.steps = l.base
	return dst
}

// The letters of the steps.
const (
	StepMoved   = stepMoved
	StepEvicted = stepEvicted
	StepExpired = stepExpired
	StepCleared = stepCleared
)

// LastClearStep returns the letter of the last step recorded in mem, as
// ClearSteps, or 0 when it holds none; it allocates nothing.
func LastClearStep(mem []byte) byte {
	var last byte
	for off := 0; off+ClearRecSize <= len(mem); off += ClearRecSize {
		c := mem[off+clearWhatOff]
		if c == 0 {
			break
		}
		last = c
	}
	return last
}

// ClearSteps returns the letters of the steps recorded in mem, a copy of
// the memory a process's ClearLog wrote (it may be dead): those of the
// steps since its last Take.
func ClearSteps(mem []byte) []byte {
	var out []byte
	for off := 0; off+ClearRecSize <= len(mem); off += ClearRecSize {
		c := mem[off+clearWhatOff]
		if c == 0 {
			break
		}
		out = append(out, c)
	}
	return out
}
