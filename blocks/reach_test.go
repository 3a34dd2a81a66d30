package blocks

import (
	"testing"

	"github.com/slack-go/slack"
)

// An ask that names who may answer offers "Hand off…", before Cancel.
func TestGoldenHandoff(t *testing.T) {
	batch := pendingView(batchRequest())
	batch.HandOff = true
	tap := pendingView(oneTapRequest())
	tap.HandOff = true
	team := pendingView(batchRequest())
	team.HandOff, team.Team = true, &Team{Wanted: 2}
	goldenMessages(t, map[string]View{"handoff_batch": batch, "handoff_onetap": tap, "handoff_team": team})
	for name, v := range map[string]View{"handoff_batch": batch, "handoff_onetap": tap, "handoff_team": team} {
		_, bs := Message(v)
		bar := bs[len(bs)-1].(*slack.ActionBlock).Elements.ElementSet
		var kinds []Kind
		for _, e := range bar {
			r, err := ParseActionID(e.(*slack.ButtonBlockElement).ActionID)
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, r.Kind)
		}
		want := map[string][]Kind{"handoff_batch": {KindSubmit, KindHandoff, KindCancel}, "handoff_onetap": {KindHandoff, KindCancel}, "handoff_team": {KindSubmit, KindHandoff}}[name]
		if len(kinds) != len(want) {
			t.Fatalf("%s: bar %v, want %v", name, kinds, want)
		}
		for i := range want {
			if kinds[i] != want[i] {
				t.Fatalf("%s: bar %v, want %v", name, kinds, want)
			}
		}
	}
	m := HandoffModal(batch, "meta")
	reportProblems(t, checkModal(t, "modal_handoff", m))
	compareGolden(t, "modal_handoff", goldenJSON(t, m))
	state := &slack.ViewState{Values: map[string]map[string]slack.BlockAction{HandoffBlockID: {HandoffActionID: {SelectedUser: "U0BOB"}}}}
	if u, ok := HandoffUser(state); !ok || u != "U0BOB" {
		t.Fatalf("HandoffUser: %q %v", u, ok)
	}
	if _, ok := HandoffUser(&slack.ViewState{}); ok {
		t.Fatal("HandoffUser with nothing picked")
	}
}
