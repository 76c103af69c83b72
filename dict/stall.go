package dict

// Stall points: places of the optimistic paths where a test built with the
// dictstall tag (go test -tags dictstall) stops a goroutine, as a scheduler
// could, to replay an interleaving step by step. Without the tag stall
// does nothing and is inlined away (stall_off.go), so the hot paths pay
// nothing for it.

// stallPoint names a point where stall is called.
type stallPoint uint8

const (
	stallBeforeSwap stallPoint = iota // pinFirst: Seq checked, page word not yet swapped
	stallAfterSwap                    // pinFirst: page word swapped, Seq not yet checked again
)
