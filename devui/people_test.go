package devui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// selectedOptions returns the values of the options the page marks chosen.
func selectedOptions(page string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`class="opt selected"[^>]*data-value="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestEachPersonAnswersForThemselves: switching the acting person in the
// sidebar shows that person's own picks of the same ask, before and after
// the app updates the message (as a team ask's "1 of 2 answered" does),
// and each person's Submit carries their own picks, as each person's
// Slack client keeps its own.
func TestEachPersonAnswersForThemselves(t *testing.T) {
	e := startEnv(t)
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("Choose"), "pick",
		slack.NewOptionBlockObject("yes", txt("Yes"), nil), slack.NewOptionBlockObject("no", txt("No"), nil))
	multi := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, txt("Choose"), "many",
		slack.NewOptionBlockObject("x", txt("X"), nil), slack.NewOptionBlockObject("y", txt("Y"), nil))
	submit := slack.NewButtonBlockElement("submit", "", txt("Submit"))
	ts := e.post(slack.NewActionBlock("q1", sel), slack.NewActionBlock("q2", multi), slack.NewActionBlock("go", submit))

	choose := func(as, block, action string, values ...string) {
		t.Helper()
		if r := e.act(map[string]any{"as": as, "kind": "select", "channel": "C1", "ts": ts, "blockId": block, "actionId": action, "values": values}); !r.OK {
			t.Fatalf("%s selects %v: %+v", as, values, r)
		}
		<-e.got
	}
	choose("U1", "q1", "pick", "yes")
	choose("U1", "q2", "many", "x", "y")
	choose("U2", "q1", "pick", "no")

	check := func(when string) {
		t.Helper()
		for _, tc := range []struct{ as, want string }{{"U1", "yes,x,y"}, {"U2", "no"}} {
			_, page := e.get("/app?as=" + tc.as + "&c=C1")
			if got := strings.Join(selectedOptions(page), ","); got != tc.want {
				t.Errorf("%s: %s's page shows %q chosen, want %q", when, tc.as, got, tc.want)
			}
			if !strings.Contains(page, `<option value="`+tc.as+`" selected>`) ||
				!regexp.MustCompile(`class="nav-item person active" href="/\?as=`+tc.as+`&amp;c=C1" data-act="as-link" data-as="`+tc.as+`"`).MatchString(page) {
				t.Errorf("%s: the sidebar does not show %s acting", when, tc.as)
			}
			for _, other := range []string{"U1", "U2"} {
				if !strings.Contains(page, `href="/?as=`+other+`&amp;c=C1" data-act="as-link"`) {
					t.Errorf("%s: %s's sidebar has no link to act as %s in this channel", when, tc.as, other)
				}
			}
		}
	}
	check("before the update")

	// The app updates the message with the same blocks and a line saying
	// who answered: each person keeps their picks.
	if _, _, _, err := e.api.UpdateMessage("C1", ts, slack.MsgOptionBlocks(
		slack.NewContextBlock("who", slack.NewTextBlockObject("mrkdwn", "1 of 2 answered: <@U1>", false, false)),
		slack.NewActionBlock("q1", sel), slack.NewActionBlock("q2", multi), slack.NewActionBlock("go", submit))); err != nil {
		t.Fatal(err)
	}
	check("after the update")

	for _, tc := range []struct{ as, pick string }{{"U2", "no"}, {"U1", "yes"}} {
		if r := e.act(map[string]any{"as": tc.as, "kind": "click", "channel": "C1", "ts": ts, "blockId": "go", "actionId": "submit"}); !r.OK {
			t.Fatalf("%s submits: %+v", tc.as, r)
		}
		cb := <-e.got
		if got := cb.BlockActionState.Values["q1"]["pick"].SelectedOption.Value; cb.User.ID != tc.as || got != tc.pick {
			t.Errorf("%s's Submit carries %s's pick %q, want %q", tc.as, cb.User.ID, got, tc.pick)
		}
		many := cb.BlockActionState.Values["q2"]["many"].SelectedOptions
		if tc.as == "U2" && len(many) != 0 || tc.as == "U1" && len(many) != 2 {
			t.Errorf("%s's Submit carries multi-select picks %+v", tc.as, many)
		}
	}
}
