package zonemetrics

import (
	"reflect"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/dict"
)

// TestEveryFigureOnce gives every figure of dict.Stats a value of its own
// and finds each in exactly one metric, of the type its Go type asks: a
// figure added to Stats and left out here, or a metric that reads the
// wrong figure, fails.
func TestEveryFigureOnce(t *testing.T) {
	var s dict.Stats
	v := reflect.ValueOf(&s).Elem()
	field := map[uint64]reflect.StructField{} // by the value given to it
	for i := range v.NumField() {
		n := uint64(1000 + i)
		switch f := v.Field(i); f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(n))
		case reflect.Uint64:
			f.SetUint(n)
		default:
			t.Fatalf("Stats.%s is a %s: say here how it is a metric", v.Type().Field(i).Name, f.Kind())
		}
		field[n] = v.Type().Field(i)
	}
	seen := map[string]string{} // field name: the metric that reads it
	names := map[string]bool{}
	for _, m := range All {
		if names[m.Name] {
			t.Errorf("%s is in All twice", m.Name)
		}
		names[m.Name] = true
		f, ok := field[m.Value(s)]
		if !ok {
			t.Errorf("%s = %d, which is no figure of Stats", m.Name, m.Value(s))
			continue
		}
		if other, ok := seen[f.Name]; ok {
			t.Errorf("%s and %s both read Stats.%s", other, m.Name, f.Name)
		}
		seen[f.Name] = m.Name
		want := Gauge
		if f.Type.Kind() == reflect.Uint64 {
			want = Counter
		}
		if m.Type != want {
			t.Errorf("%s, of Stats.%s (%s), is a %s, want a %s", m.Name, f.Name, f.Type, m.Type, want)
		}
		if strings.HasSuffix(m.Name, "_total") != (m.Type == Counter) {
			t.Errorf("%s is a %s: a counter's name ends in _total, and only a counter's", m.Name, m.Type)
		}
		if !strings.HasPrefix(m.Name, "shmzone_") || m.Help == "" || !strings.HasSuffix(m.Help, ".") {
			t.Errorf("%s: want a shmzone_ name and a help sentence, got help %q", m.Name, m.Help)
		}
	}
	for _, f := range field {
		if _, ok := seen[f.Name]; !ok {
			t.Errorf("Stats.%s has no metric", f.Name)
		}
	}
}
