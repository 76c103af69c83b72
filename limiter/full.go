package limiter

import (
	"errors"

	"github.com/shmzone/shmzone/dict"
)

// A full zone. A write that does not fit in its key's shard makes the
// dictionary evict in rounds, as dict's DESIGN.md, section 5, describes.
// It evicts expired entries, then live ones used once, then the least
// used. It clears a whole slab page when the shard's pages hold entries of
// other sizes. A write that needs a run of pages, a key of pages, may still
// find none after those rounds. The dictionary then answers ErrNoMemory
// while it is evicting. A decision must not fail so. The limiter tries the
// write again, each attempt evicting more, until it fits. After
// Dict.AttemptsToEmpty attempts, the shard holds nothing more to free. So
// the write fails with ErrNoMemory only when its entry does not fit in an
// empty shard, or when others refill the shard as fast as it is emptied. An
// entry larger than any shard is dict.ErrValueTooLarge at once.

// Stats are a limiter's counts of its writes that met a full zone. They
// count in this process, since the limiter was built.
type Stats struct {
	// Forcible counts the operations whose write evicted live entries of
	// other keys to make room. The dictionary reports these as forcible. An
	// operation is a decision, an Uncommit, a Leaving or a Renew of one
	// key. Each eviction forgets some key's state, which starts afresh on
	// its next request. A zone whose limiters often report Forcible is too
	// small for its keys.
	Forcible uint64
	// Retries counts the writes tried again because the key's shard was
	// still full after the dictionary's eviction rounds.
	Retries uint64
	// Evicted counts the operations that found their key's state evicted,
	// as dict.Outcome's Lost reports it. That state still meant something,
	// and the key started afresh. A client being limited whose state is
	// evicted is admitted again. A zone whose limiters count Evicted is too
	// small for its active keys, as DESIGN.md, section 7, explains.
	Evicted uint64
}

// Stats returns the limiter's counts.
func (sp *space) Stats() Stats {
	return Stats{
		Forcible: sp.counts.forcible.Load(),
		Retries:  sp.counts.retries.Load(),
		Evicted:  sp.counts.evicted.Load(),
	}
}

// settle finishes a write whose Outcome was out and error err: while err
// is ErrNoMemory it calls again, the same write, up to d.AttemptsToEmpty()
// times; it counts the operation in Forcible when any attempt evicted, in
// Evicted when one found its key's state evicted, and returns the last
// error. Callers call it only when out is not zero or err is not nil, so
// that a write that fits costs nothing more.
func (sp *space) settle(d *dict.Dict, out dict.Outcome, err error, again func() (dict.Outcome, error)) error {
	if errors.Is(err, dict.ErrNoMemory) {
		for n := d.AttemptsToEmpty(); n > 0; n-- {
			sp.counts.retries.Add(1)
			var o dict.Outcome
			o, err = again()
			out.Forcible = out.Forcible || o.Forcible
			out.Lost = out.Lost || o.Lost
			if !errors.Is(err, dict.ErrNoMemory) {
				break
			}
		}
	}
	if out.Forcible {
		sp.counts.forcible.Add(1)
	}
	if out.Lost {
		sp.counts.evicted.Add(1)
	}
	return err
}
