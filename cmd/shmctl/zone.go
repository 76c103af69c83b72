package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/shm"
)

// errZoneExists is returned by create for a zone that is already there.
var errZoneExists = errors.New("zone exists")

// zoneError is a zone that could not be opened; its message says which of
// the distinct failures (exit codes 3 to 7) it is.
type zoneError struct {
	path string
	err  error
}

func (z *zoneError) Unwrap() error { return z.err }

func (z *zoneError) Error() string {
	switch zoneExitCode(z.err) {
	case exitNoZone:
		return fmt.Sprintf("no such zone: %s (create one with: shmctl create NAME --size 64M)", z.path)
	case exitPerm:
		return fmt.Sprintf("permission denied: %s", z.path)
	}
	msg := z.err.Error()
	if !strings.Contains(msg, z.path) {
		msg = z.path + ": " + msg
	}
	if zoneExitCode(z.err) == exitCorrupt {
		msg += " (shmctl check ZONE tells more)"
	}
	return msg
}

// zoneExitCode returns the exit code of an error opening or reading a zone,
// 0 when it is none of those.
func zoneExitCode(err error) int {
	switch {
	case errors.Is(err, shm.ErrCorrupt):
		return exitCorrupt
	case errors.Is(err, shm.ErrVersion):
		return exitVersion
	case errors.Is(err, shm.ErrNotZone), errors.Is(err, shm.ErrNotRegular):
		return exitNotZone
	case errors.Is(err, fs.ErrNotExist):
		return exitNoZone
	case errors.Is(err, fs.ErrPermission):
		return exitPerm
	}
	return 0
}

// openRead opens a zone read-only: the mapping is PROT_READ, no lock is
// taken and nothing in the file changes, whoever else has it open.
func (e *env) openRead(name string) (*dict.Dict, error) {
	return e.open(name, dict.Options{ReadOnly: true})
}

// openWrite opens a zone read-write, creating it when o.Size > 0.
func (e *env) openWrite(name string, o dict.Options) (*dict.Dict, error) {
	o.ReadOnly = false
	return e.open(name, o)
}

// openCreate opens a zone read-write, creating it with o.Size and o.Shards
// when it is absent. Options that make no zone are a usage error, checked
// before any file is made; a creation that fails leaves no file behind. A
// folder that does not exist is a failure (exit 8), not "no such zone".
func (e *env) openCreate(name string, o dict.Options) (*dict.Dict, error) {
	if _, err := shm.Geometry(o.Size, o.Shards, 0); err != nil {
		return nil, usagef("%v", err)
	}
	path := shm.Path(name)
	_, absent := os.Lstat(path)
	d, err := e.openWrite(name, o)
	if errors.Is(err, fs.ErrNotExist) {
		// Not "no such zone" (exit 3): the file would have been created.
		dir := filepath.Dir(path)
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot create zone %s: folder %s does not exist", path, dir)
		}
	}
	if err != nil && errors.Is(absent, fs.ErrNotExist) {
		if fi, serr := os.Lstat(path); serr == nil && fi.Size() == 0 {
			os.Remove(path)
		}
	}
	return d, err
}

func (e *env) open(name string, o dict.Options) (*dict.Dict, error) {
	path := shm.Path(name)
	o.Clock = e.clock
	d, err := dict.Open(path, o)
	if err != nil {
		return nil, &zoneError{path, err}
	}
	if e.opened != nil {
		e.opened(d)
	}
	return d, nil
}

// zoneDir returns the folder zone names resolve in.
func zoneDir() string {
	if dir := os.Getenv("SHMZONE_DIR"); dir != "" {
		return dir
	}
	return shm.DefaultDir
}

// parseSize reads a size in bytes: a number with an optional binary unit,
// K, M, G or T (KiB, MiB, … and KB, MB, … mean the same). An "i" is
// taken only after a unit.
func parseSize(s string) (int64, error) {
	t, binary := strings.CutSuffix(strings.TrimSuffix(strings.ToUpper(s), "B"), "I")
	shift := 0
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			shift, t = 10*(i+1), t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > 1<<(62-shift) || binary && shift == 0 {
		return 0, usagef("bad size %q: want a positive number of bytes, with K, M, G or T", s)
	}
	return n << shift, nil
}

// formatSize writes bytes for people: "64.0 MiB", or "812 B". The unit is
// the one the figure, rounded to a tenth, is below 1024 in: 1048575 bytes
// are "1.0 MiB", not "1024.0 KiB".
func formatSize(n int64) string {
	const units = "KMGT"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n) / 1024
	for i := 0; ; i++ {
		s := strconv.FormatFloat(f, 'f', 1, 64)
		if r, _ := strconv.ParseFloat(s, 64); r < 1024 || i == len(units)-1 {
			return fmt.Sprintf("%s %ciB", s, units[i])
		}
		f /= 1024
	}
}
