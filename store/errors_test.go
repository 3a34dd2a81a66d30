package store

import (
	"fmt"
	"testing"
)

// A CorruptError's message names a few of the rows and counts the rest.
func TestCorruptErrorNamesFew(t *testing.T) {
	var ce *CorruptError
	for i := range 7 {
		Corrupt(&ce, fmt.Sprintf("a%d", i), Internal(ErrCorrupt, "corrupt record %q", fmt.Sprintf("a%d", i)))
	}
	if want := `7 corrupt records left out (a0, a1, a2, a3, a4 and 2 more): INTERNAL: corrupt record "a0"`; ce.Error() != want {
		t.Errorf("Error() = %q, want %q", ce.Error(), want)
	}
}
