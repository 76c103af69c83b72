//go:build amd64 && !race

#include "textflag.h"

// func storeRelease(p *uint32, v uint32)
//
// A plain MOV: on amd64 every store has release order (TSO), and a call to
// assembly is a compiler barrier, so no earlier store moves past it.
TEXT ·storeRelease(SB),NOSPLIT,$0-12
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET
