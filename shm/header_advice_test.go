package shm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// TestParseHeaderVersionAdvice checks that every ErrVersion says what to do
// with the zone, since no build of this one can read it: recreate it, or
// carry its data over with the shmctl of its own version or machine.
func TestParseHeaderVersionAdvice(t *testing.T) {
	h := testHeader()
	put32 := func(off uintptr, v uint32) []byte {
		b := encoded(h)
		nativeOrder.PutUint32(b[off:], v)
		resum(b)
		return b
	}
	tests := []struct {
		name   string
		b      []byte
		layout uint32
		want   []string
	}{
		{name: "version", b: put32(unsafe.Offsetof(hdr{}.Version), Version+1), layout: h.Layout,
			want: []string{fmt.Sprintf("format version %d, this build reads %d", Version+1, Version), "shmctl create", "dump it with the shmctl of its version", "restore"}},
		{name: "layout", b: encoded(h), layout: h.Layout + 1,
			want: []string{"shard layout 0x1234, this build reads 0x1235", "shmctl create", "dump it with the shmctl of its version", "restore"}},
		{name: "byte order", b: put32(unsafe.Offsetof(hdr{}.Order), 0x04030201), layout: h.Layout,
			want: []string{"byte order mark 0x4030201", "other byte order", "dump it there", "restore the dump here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseHeader(tt.b, h.Size, tt.layout)
			if !errors.Is(err, ErrVersion) {
				t.Fatalf("parseHeader = %v, want ErrVersion", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("parseHeader = %q, want it to say %q", err, w)
				}
			}
		})
	}
}
