package asks

import (
	"context"
	"slices"
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

// EndWorkspacesOf ends, of the installation's pending asks, those posted
// in the workspaces it was taken from: not its asks in its other
// workspaces, nor those whose workspace is unknown, nor the workspace's
// asks through its own installation, nor an ask that had ended.
func TestEndWorkspacesOf(t *testing.T) {
	r := newRig(t)
	r.run()
	ctx := context.Background()
	if a := r.create(interaction.AskInput{Request: twoQuestions()}); r.get(a.ID).Workspace != team {
		t.Fatalf("an ask of the home workspace is posted in %q, want %s", r.get(a.ID).Workspace, team)
	}
	r.put("aorg1", "E0ORG", "T0ONE", chanID, interaction.StatusPending)
	r.put("aorg2", "E0ORG", "T0TWO", chanID, interaction.StatusPending)
	r.put("aorg3", "E0ORG", "T0THREE", chanID, interaction.StatusPending)
	r.put("aorg4", "E0ORG", "", chanID, interaction.StatusPending)      // named the org, or from before Workspace
	r.put("aown5", "T0ONE", "T0ONE", chanID, interaction.StatusPending) // T0ONE's own install
	r.put("adone6", "E0ORG", "T0ONE", chanID, interaction.StatusCancelled)
	const why = "the slackask app's org-wide installation was removed from this workspace"
	n, err := r.svc.EndWorkspacesOf(ctx, "E0ORG", []string{"T0ONE", "T0THREE"}, why)
	if err != nil || n != 2 {
		t.Fatalf("EndWorkspacesOf = %d, %v; want 2", n, err)
	}
	r.checkAborted(why, "aorg1", "aorg3")
	r.checkPending("aorg2", "aorg4", "aown5")
	r.checkCancelled("adone6")
	if n, err := r.svc.EndWorkspacesOf(ctx, "E0ORG", []string{"T0ONE"}, why); err != nil || n != 0 {
		t.Errorf("again: EndWorkspacesOf = %d, %v; want 0", n, err)
	}
}

// put stores an ask of installation key posted in workspace ws ("":
// unknown) and channel ("": no conversation yet), as Create stamps one.
func (r *rig) put(id, key, ws, channel string, status interaction.Status) {
	r.t.Helper()
	rec := Record{Ask: interaction.Ask{ID: id, Status: status, Questions: twoQuestions().Questions,
		Channel: channel, TS: "1700000000.00000" + id[len(id)-1:], CreatedAt: time.Now()}, TeamID: key, Workspace: ws, Rev: 1, Synced: true}
	if _, _, err := r.st.Create(context.Background(), rec); err != nil {
		r.t.Fatal(err)
	}
}

// checkAborted checks that the asks ids ended aborted, synced (no update
// tried), saying why.
func (r *rig) checkAborted(why string, ids ...string) {
	r.t.Helper()
	for _, id := range ids {
		got := r.get(id)
		if got.Status != interaction.StatusAborted || !got.Synced || got.Note != why ||
			got.Error == nil || got.Error.Code != interaction.AskAborted || !strings.Contains(got.Error.Message, why) {
			r.t.Errorf("%s: %s synced %v note %q error %+v", id, got.Status, got.Synced, got.Note, got.Error)
		}
	}
}

// checkPending checks that the asks ids are still pending.
func (r *rig) checkPending(ids ...string) {
	r.t.Helper()
	for _, id := range ids {
		if got := r.get(id); got.Status != interaction.StatusPending {
			r.t.Errorf("%s (%s in %q): %s, want pending", id, got.TeamID, got.Workspace, got.Status)
		}
	}
}

// checkCancelled checks that the ask id, put cancelled, was not ended
// again.
func (r *rig) checkCancelled(id string) {
	r.t.Helper()
	if got := r.get(id); got.Status != interaction.StatusCancelled || got.Error != nil {
		r.t.Errorf("an ask that had ended was ended again: %s %+v", got.Status, got.Error)
	}
}

// EndUnreachableOf asks about the installation's pending asks whose
// workspace is unknown, and only those: it ends the ones said to be
// unreachable, as EndWorkspacesOf does; one reachable, one it could not
// tell about and every other ask stay pending.
func TestEndUnreachableOf(t *testing.T) {
	r := newRig(t)
	r.run()
	ctx := context.Background()
	r.put("agone1", "E0ORG", "", "C0GONE", interaction.StatusPending)
	r.put("ahere2", "E0ORG", "", "C0HERE", interaction.StatusPending)
	r.put("afail3", "E0ORG", "", "C0FAIL", interaction.StatusPending)
	r.put("aknown4", "E0ORG", "T0ONE", "C0GONE", interaction.StatusPending) // its workspace is known: EndWorkspacesOf's
	r.put("aother5", "E0OTHER", "", "C0GONE", interaction.StatusPending)
	r.put("aown6", "T0ONE", "T0ONE", "C0GONE", interaction.StatusPending)
	r.put("adone7", "E0ORG", "", "C0GONE", interaction.StatusCancelled)
	r.put("adm8", "E0ORG", "", "", interaction.StatusPending) // no conversation yet
	var asked []string
	reachable := func(_ context.Context, rec Record) (bool, error) {
		asked = append(asked, rec.ID)
		switch rec.Channel {
		case "C0GONE":
			return false, nil
		case "C0FAIL":
			return false, interaction.Errorf(interaction.SlackError, "ratelimited")
		}
		return true, nil
	}
	const why = "the slackask app's org-wide installation was removed from this workspace"
	n, err := r.svc.EndUnreachableOf(ctx, "E0ORG", reachable, why)
	if err != nil || n != 1 {
		t.Fatalf("EndUnreachableOf = %d, %v; want 1", n, err)
	}
	slices.Sort(asked)
	if want := []string{"afail3", "agone1", "ahere2"}; !slices.Equal(asked, want) {
		t.Errorf("asked about %v, want %v", asked, want)
	}
	r.checkAborted(why, "agone1")
	r.checkPending("ahere2", "afail3", "aknown4", "aother5", "aown6", "adm8")
	r.checkCancelled("adone7")
}
