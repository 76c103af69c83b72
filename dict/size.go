package dict

import (
	"fmt"
	"strings"

	"github.com/shmzone/shmzone/shm"
)

// Size returns the zone's size in bytes: the size of its file. It is the
// size in force, whatever Options.Size the Dict was opened with.
func (d *Dict) Size() int64 { return d.z.Header().Size }

// Capacity returns the zone's size in bytes.
//
// Deprecated: Capacity is Size under its old name.
func (d *Dict) Capacity() int64 { return d.Size() }

// checkSize returns an error wrapping ErrSizeMismatch if size is not 0 and
// a zone created with it would not have the size of the zone at path, of
// header h. Open rounds a new zone's size down to whole shards
// (shm.Geometry). So the size a zone was created with matches, and so does
// the size it has, also for a zone made when shards were rounded to
// shm.ShardAlign.
func checkSize(path string, size int64, h shm.Header) error {
	if size == 0 {
		return nil
	}
	if g, err := shm.Geometry(size, h.Shards, 0); err == nil && g.Size == h.Size {
		return nil
	}
	// A zone made before shards were whole pages has shards of size
	// rounded down to shm.ShardAlign.
	if size > shm.HeaderSize && (size-shm.HeaderSize)/int64(h.Shards)&^(shm.ShardAlign-1) == h.ShardSize {
		return nil
	}
	q := path
	if !strings.Contains(q, "/") {
		// shmctl reads a name without a slash as a zone name, not a path.
		q = "./" + q
	}
	old, tmp := shellWord(q), shellWord(q+".new")
	return fmt.Errorf("%w: %s is %d bytes, Options.Size asks %d; "+
		"Size 0 attaches at any size; to resize, stop the zone's processes and run: "+
		"shmctl dump %s | shmctl restore %s --size %d && mv %s %s",
		ErrSizeMismatch, path, h.Size, size, old, tmp, size, tmp, old)
}

// shellWord quotes s for a POSIX shell if it holds a byte that needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
