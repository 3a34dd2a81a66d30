package installs

import (
	"path/filepath"
	"testing"

	"github.com/slackask/slackask/store/sqlite"
)

// BenchmarkStoredLookup: what the bot pays per Web API call with OAuth
// installs: one read of the installation's row and its AES-GCM open.
func BenchmarkStoredLookup(b *testing.B) {
	ctx := b.Context()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "slackask.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, _ := NewSealer(make([]byte, KeySize), nil)
	st := NewStored(db, s, StoredConfig{})
	for _, team := range []string{"T1", "T2", "T3"} {
		if err := st.Save(ctx, Installation{Team: team, Enterprise: "E1", BotToken: "xoxb-" + team, Scopes: []string{"chat:write"}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Lookup(ctx, "E1", "T2"); err != nil {
			b.Fatal(err)
		}
	}
}
