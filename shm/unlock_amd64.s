//go:build amd64 && !race

#include "textflag.h"

// func storeMark(p *uint64, v uint64)
//
// A plain MOV behind a call: on amd64 every store has release order (TSO),
// and the compiler can neither drop nor merge a store it cannot see.
TEXT ·storeMark(SB),NOSPLIT,$0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
