package asks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
)

// EndWorkspace ends the workspace's pending asks aborted, saying why, and
// tries no message update for them (the app is gone); another workspace's
// ask stays pending, an ended one stays as it ended.
func TestEndWorkspace(t *testing.T) {
	r := newRig(t)
	r.run()
	ctx := context.Background()
	a := r.create(interaction.AskInput{Request: twoQuestions()})
	b := r.create(interaction.AskInput{Request: twoQuestions(), User: alice})
	done := r.create(interaction.AskInput{Request: twoQuestions()})
	if _, err := r.svc.Withdraw(ctx, done.ID); err != nil {
		t.Fatal(err)
	}
	other := Record{Ask: interaction.Ask{ID: "aother", Status: interaction.StatusPending, Questions: twoQuestions().Questions,
		Channel: chanID, TS: "1700000000.999999", CreatedAt: time.Now()}, TeamID: "T0OTHER", Rev: 1, Synced: true}
	if _, _, err := r.st.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	const why = "the slackask app was uninstalled from this workspace"
	n, err := r.svc.EndWorkspace(ctx, team, why)
	if err != nil || n != 2 {
		t.Fatalf("EndWorkspace = %d, %v; want 2", n, err)
	}
	for _, id := range []string{a.ID, b.ID} {
		got, _ := r.st.Get(ctx, id)
		if got.Status != interaction.StatusAborted || !got.Synced || got.Error == nil || !strings.Contains(got.Error.Message, why) {
			t.Errorf("%s: %s synced %v error %+v", id, got.Status, got.Synced, got.Error)
		}
	}
	if got, _ := r.st.Get(ctx, "aother"); got.Status != interaction.StatusPending {
		t.Errorf("another workspace's ask: %s", got.Status)
	}
	if got, _ := r.st.Get(ctx, done.ID); got.Error == nil || strings.Contains(got.Error.Message, why) {
		t.Errorf("an ask that had ended was ended again: %+v", got.Error)
	}
	// A later end's update is tried; by then none was for the workspace's.
	later := r.create(interaction.AskInput{Request: twoQuestions()})
	if _, err := r.svc.Withdraw(ctx, later.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the later ask's update", func() bool { return r.surf.count(&r.surf.updates, later.ID) > 0 })
	for _, id := range []string{a.ID, b.ID} {
		if n := r.surf.count(&r.surf.updates, id); n != 0 {
			t.Errorf("%s: %d message updates tried after the uninstall", id, n)
		}
	}
}
