package main

import "testing"

func TestHumanKey(t *testing.T) {
	tests := []struct{ key, want string }{
		{"plain", "plain"},
		{"ünïcode:☃", "ünïcode:☃"},
		{"two words", `"two words"`},
		{`"quoted"`, `"\"quoted\""`},
		{"tab\t", `"tab\t"`},
		{"esc\x1b[2J", `"esc\x1b[2J"`},
		{"\xff", `"\xff"`},
		{"", `""`},
	}
	for _, tt := range tests {
		if got := humanKey(tt.key); got != tt.want {
			t.Errorf("humanKey(%q) = %s, want %s", tt.key, got, tt.want)
		}
	}
}
