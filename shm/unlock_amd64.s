//go:build amd64 && !race

#include "textflag.h"

// func storeRelease(p *uint64, v uint64)
//
// A plain MOV: on amd64 every store has release order (TSO), and a call to
// assembly is a compiler barrier, so no earlier store moves past it.
TEXT ·storeRelease(SB),NOSPLIT,$0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
