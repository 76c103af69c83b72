package main

import (
	"fmt"
	"strconv"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/shm"
)

// jsonRecord is a registry record in a dump: its key and its words, each
// in 16 hex digits. JSON numbers cannot hold every uint64.
type jsonRecord struct {
	Record string   `json:"record"`
	Words  []string `json:"words"`
}

// jsonLine is a line of a dump: a key, or a registry record when Record is
// set.
type jsonLine struct {
	jsonItem
	Record *string  `json:"record"`
	Words  []string `json:"words"`
}

func newJSONRecord(r shm.Record) jsonRecord {
	j := jsonRecord{Record: fmt.Sprintf("%016x", r.Key)}
	for _, w := range r.Data {
		j.Words = append(j.Words, fmt.Sprintf("%016x", w))
	}
	return j
}

// record decodes a record line. It refuses a line that also holds a key,
// a key that is not 16 hex digits or is 0, and words that are not
// shm.RecordWords of 16 hex digits.
func (j jsonLine) record() (shm.Record, error) {
	var r shm.Record
	if j.Key != "" || j.KeyB64 != "" || j.Kind != "" {
		return r, fmt.Errorf("registry record: a key and a record on one line")
	}
	k, err := hexWord(*j.Record)
	if err != nil {
		return r, fmt.Errorf("registry record: key: %v", err)
	}
	if k == 0 {
		return r, fmt.Errorf("registry record: key 0")
	}
	if len(j.Words) != shm.RecordWords {
		return r, fmt.Errorf("registry record %s: %d words, want %d", *j.Record, len(j.Words), shm.RecordWords)
	}
	r.Key = k
	for i, s := range j.Words {
		if r.Data[i], err = hexWord(s); err != nil {
			return r, fmt.Errorf("registry record %s: word %d: %v", *j.Record, i, err)
		}
	}
	return r, nil
}

// hexWord parses 16 hex digits.
func hexWord(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("%q is not 16 hex digits", s)
	}
	w, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not 16 hex digits", s)
	}
	return w, nil
}

// restoreRecord stores a registry record, over the one of its key if
// there is one.
func restoreRecord(d *dict.Dict, r shm.Record) error {
	return d.UpdateRecord(r.Key, func(data *[shm.RecordWords]uint64, _ bool) bool {
		*data = r.Data
		return true
	})
}
