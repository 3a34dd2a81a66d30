package blocks

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// gen makes random valid requests and views from a seeded source.
type gen struct{ *rand.Rand }

var fragments = []string{
	injection, "<!channel>", "<!here|here>", "<@U123>", "<#C1|general>", "<https://evil|click>",
	"&", "&amp;", "&lt;", "<", ">", "@channel", "@here", "#general", "*bold*", "_it_", "`code`", "```",
	"\n", "\n\n", "\t", " ", "  ", "\r\n", "\u00a0", "\u200b", "\u200d", "\ufeff",
	"é", "e\u0301", "ß", "日本語", "한국어", "עברית", "العربية", "🙂", "👩‍👩‍👧", "🇫🇷", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
	"\xff", "\xe2\x82", "lorem ipsum ", "dolor sit amet ", "x",
}

// str returns a random string of at most max runes, often short, sometimes
// as long as allowed.
func (g gen) str(max int) string {
	n := g.length(max)
	var b strings.Builder
	runes := 0
	for runes < n {
		f := fragments[g.Intn(len(fragments))]
		if g.Intn(3) == 0 {
			f = strings.Repeat("abcdefghij", 1+g.Intn(20))
		}
		for _, r := range f {
			if runes == n {
				break
			}
			b.WriteRune(r)
			runes++
		}
	}
	return b.String()
}

func (g gen) length(max int) int {
	switch g.Intn(5) {
	case 0:
		return max
	case 1:
		return g.Intn(max + 1)
	case 2:
		return min(max, 200+g.Intn(600))
	}
	return min(max, g.Intn(40))
}

// nonBlank returns a random string of at most max runes that is not blank.
func (g gen) nonBlank(max int) string {
	s := g.str(max)
	if strings.TrimSpace(s) == "" {
		s = "x"
	}
	return s
}

func (g gen) request() interaction.Request {
	var r interaction.Request
	if g.Intn(4) > 0 {
		r.Agent = &interaction.Agent{ID: g.str(interaction.MaxAgentNameLen), Name: g.str(interaction.MaxAgentNameLen)}
	}
	for i := range 1 + g.Intn(slackid.MaxQuestions) {
		r.Questions = append(r.Questions, g.question(i))
	}
	// a display the options do not fit (too many buttons or checkboxes,
	// or rows for one message) falls back to auto, as a caller would
	for i := range r.Questions {
		if drawable(r) == nil {
			break
		}
		r.Questions[i].Display = ""
	}
	return r
}

func (g gen) question(i int) interaction.Question {
	q := interaction.Question{
		ID:       fmt.Sprintf("q%d-%s", i, strings.ToValidUTF8(g.str(20), "?")),
		Question: g.nonBlank(interaction.MaxQuestionLen),
	}
	if g.Intn(2) == 0 {
		q.Detail = g.str(interaction.MaxDetailLen)
	}
	if g.Intn(2) == 0 {
		q.Header = g.str(interaction.MaxHeaderLen)
	}
	q.MultiSelect = g.Intn(3) == 0
	n := []int{0, 1, 2, 5, 10, 25, slackid.MaxOptions}[g.Intn(7)]
	if n > 0 {
		q.Display = []interaction.Display{"", "", interaction.DisplayAuto, interaction.DisplayMenu, interaction.DisplayButtons}[g.Intn(5)]
	} else if g.Intn(3) == 0 {
		q.Default = g.nonBlank(interaction.MaxCustomLen)
	}
	seen := map[string]bool{}
	for j := range n {
		label := g.nonBlank(interaction.MaxLabelLen)
		if seen[label] {
			label = string([]rune(label)[:min(len([]rune(label)), interaction.MaxLabelLen-6)]) + fmt.Sprintf(" #%d", j)
		}
		seen[label] = true
		o := interaction.Option{Label: label}
		if g.Intn(2) == 0 {
			o.Description = g.str(interaction.MaxDescriptionLen)
		}
		o.Veto = g.Intn(6) == 0
		o.Style = []string{"", "", interaction.StylePrimary, interaction.StyleDanger}[g.Intn(4)]
		if g.Intn(4) == 0 {
			o.Confirm = &interaction.Confirm{}
			if g.Intn(2) == 0 {
				o.Confirm = &interaction.Confirm{Title: g.str(slackid.MaxConfirmTitle), Text: g.str(slackid.MaxConfirmText),
					Confirm: g.str(slackid.MaxConfirmButton), Deny: g.str(slackid.MaxConfirmButton)}
			}
		}
		if !q.MultiSelect && g.Intn(5) == 0 {
			o.Note = interaction.NoteRequired
		}
		q.Options = append(q.Options, o)
	}
	if n > 0 && strings.TrimSpace(q.Detail) != "" && g.Intn(3) == 0 {
		q.Intent = &interaction.Intent{Kind: interaction.IntentPlanReview, Approve: q.Options[g.Intn(n)].Label}
	}
	return q
}

var statuses = []interaction.Status{"", interaction.StatusPending, interaction.StatusPending,
	interaction.StatusAnswered, interaction.StatusCancelled, interaction.StatusAborted, interaction.StatusExpired, "bogus"}

func (g gen) ids() []string {
	pool := []string{"U1", "W2ABC", "S3XYZ", "U0123456789", "C123", "<!channel>", injection, "", "u1", "S"}
	var out []string
	for range g.Intn(8) {
		out = append(out, pool[g.Intn(len(pool))])
	}
	if g.Intn(10) == 0 {
		for i := range 400 {
			out = append(out, fmt.Sprintf("U%08d", i))
		}
	}
	return out
}

func (g gen) askID() string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
	b := make([]byte, 1+g.Intn(maxAskID))
	for i := range b {
		b[i] = chars[g.Intn(len(chars))]
	}
	return string(b)
}

func (g gen) view() View {
	r := g.request()
	v := View{AskID: g.askID(), Rev: g.Intn(1 << 20), Request: r, Status: statuses[g.Intn(len(statuses))],
		Responders: g.ids(), Mention: g.ids(), Note: g.str(2000)}
	for _, q := range r.Questions[:g.Intn(len(r.Questions)+1)] {
		v.Progress = append(v.Progress, g.progress(q))
	}
	when := time.Unix(g.Int63n(4e9), 0)
	if g.Intn(2) == 0 {
		v.ExpiresAt, v.EndedAt = &when, when
	}
	if v.Status == interaction.StatusAnswered || g.Intn(5) == 0 {
		a := interaction.AnswerFrom(r, v.Progress)
		v.Answer = &a
		v.AnsweredBy = &interaction.User{ID: []string{"U1", "W9", "<!here>", ""}[g.Intn(4)], Name: g.str(300)}
	}
	return v
}

func (g gen) progress(q interaction.Question) interaction.Progress {
	switch g.Intn(4) {
	case 0:
		return interaction.Progress{Custom: g.str(4000)}
	case 1:
		return interaction.Progress{Skipped: true}
	case 2:
		var p interaction.Progress
		for range g.Intn(4) {
			if len(q.Options) > 0 {
				p.Selected = append(p.Selected, q.Options[g.Intn(len(q.Options))].Label)
			}
		}
		return append2(p, "not a label")
	}
	return interaction.Progress{}
}

func append2(p interaction.Progress, s string) interaction.Progress {
	p.Selected = append(p.Selected, s)
	return p
}

func propertyRuns(t *testing.T) int {
	if testing.Short() {
		return 40
	}
	return 200
}

// TestRandomViews renders many random valid asks and checks every message
// and modal against the schema and the limits, and that the selections
// read back from a state are the full labels.
func TestRandomViews(t *testing.T) {
	loadSchemas(t)
	const seed = 20260314
	g := gen{rand.New(rand.NewSource(seed))}
	for i := range propertyRuns(t) {
		v := g.view()
		if err := drawable(v.Request); err != nil {
			t.Fatalf("run %d: generator made an invalid request: %v", i, err)
		}
		where := fmt.Sprintf("seed %d run %d (%s)", seed, i, v.Status)
		text, bs := Message(v)
		problems := checkMessage(t, where, v, text, bs)
		q := g.Intn(len(v.Request.Questions))
		problems = append(problems, checkModal(t, where+" other", OtherModal(v, q, g.str(3000)))...)
		problems = append(problems, checkModal(t, where+" details", DetailsModal(v, q, g.str(3000)))...)
		if !ended(v) {
			problems = append(problems, roundTrip(t, g, v, bs)...)
		}
		if len(problems) > 0 {
			reportProblems(t, problems)
			t.FailNow()
		}
	}
}

// roundTrip picks random options of every question, builds the state Slack
// would send from the rendered selects, and checks SelectionsFromState.
func roundTrip(t testing.TB, g gen, v View, bs []slack.Block) []string {
	state := &slack.BlockActionStates{Values: map[string]map[string]slack.BlockAction{}}
	want := map[int][]string{}
	for _, b := range bs {
		ab, ok := b.(*slack.ActionBlock)
		if !ok {
			continue
		}
		for _, e := range ab.Elements.ElementSet {
			var action slack.BlockAction
			var opts []*slack.OptionBlockObject
			switch s := e.(type) {
			case *slack.SelectBlockElement:
				opts, action = s.Options, slack.BlockAction{Type: "static_select", ActionID: s.ActionID}
			case *slack.MultiSelectBlockElement:
				opts, action = s.Options, slack.BlockAction{Type: "multi_static_select", ActionID: s.ActionID}
			default:
				continue
			}
			r, _ := ParseActionID(action.ActionID)
			q := v.Request.Questions[r.Question]
			picked := g.Perm(len(opts))[:1+g.Intn(len(opts))]
			if !q.MultiSelect {
				picked = picked[:1]
			}
			var labels []string
			for j := range q.Options {
				if containsInt(picked, j) {
					labels = append(labels, q.Options[j].Label)
				}
			}
			for _, j := range picked {
				action.SelectedOptions = append(action.SelectedOptions, *opts[j])
			}
			if !q.MultiSelect {
				action.SelectedOption, action.SelectedOptions = *opts[picked[0]], nil
			}
			state.Values[ab.BlockID] = map[string]slack.BlockAction{action.ActionID: action}
			want[r.Question] = labels
			if got, err := LabelsFromAction(v, r.Question, &action); err != nil || !reflect.DeepEqual(got, labels) {
				return []string{fmt.Sprintf("LabelsFromAction(q%d) = %q, %v; want %q", r.Question, got, err, labels)}
			}
		}
	}
	// A stale revision of the same ask is ignored.
	stale := v
	stale.Rev++
	state.Values[blockID(stale, 0, kindControls)] = map[string]slack.BlockAction{
		ActionID(Ref{AskID: v.AskID, Rev: stale.Rev, Question: 0, Kind: KindSelect}): {Type: "static_select", SelectedOption: slack.OptionBlockObject{Value: "0"}},
	}
	if got := SelectionsFromState(v, state); !reflect.DeepEqual(got, want) {
		return []string{fmt.Sprintf("SelectionsFromState = %v, want %v", got, want)}
	}
	return nil
}

func containsInt(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// TestWorstCaseBlockCounts renders the largest asks Validate accepts, in
// every status, as one person's ask and as a team's (50 people, a tally
// of every option), and checks the block budget.
func TestWorstCaseBlockCounts(t *testing.T) {
	r := hugeRequest()
	for i := range r.Questions {
		q := &r.Questions[i]
		q.Options = manyOptionsRequest().Questions[0].Options
		q.Intent = &interaction.Intent{Kind: interaction.IntentPlanReview, Approve: q.Options[3].Label}
		q.MultiSelect = i%2 == 0
	}
	if err := drawable(r); err != nil {
		t.Fatal(err)
	}
	team := &Team{Wanted: interaction.MaxResponders, Tally: map[string]map[string]int{}}
	for i := range interaction.MaxResponders {
		team.Answered = append(team.Answered, interaction.User{ID: fmt.Sprintf("U0P%03d", i), Name: longString("n", 100)})
	}
	for _, q := range r.Questions {
		counts := map[string]int{}
		for _, o := range q.Options {
			counts[o.Label] = 7
		}
		team.Tally[q.ID] = counts
	}
	for _, tm := range []*Team{nil, team} {
		for _, st := range statuses {
			v := pendingView(r)
			v.Status, v.Team = st, tm
			for range r.Questions {
				v.Progress = append(v.Progress, interaction.Progress{Custom: longString("c", 5000)})
			}
			a := interaction.AnswerFrom(r, v.Progress)
			v.Answer = &a
			text, bs := Message(v)
			if len(bs) > MaxMessageBlocks {
				t.Errorf("%q (team %v): %d blocks", st, tm != nil, len(bs))
			}
			reportProblems(t, checkMessage(t, fmt.Sprintf("%q team=%v", st, tm != nil), v, text, bs))
		}
	}
	// The questions differ only in their index: one of each modal will do.
	v := pendingView(r)
	v.Progress = []interaction.Progress{{Custom: longString("c", 5000)}}
	reportProblems(t, checkModal(t, "details", DetailsModal(v, 0, strings.Repeat("m", 3000))))
	reportProblems(t, checkModal(t, "other", OtherModal(v, 0, strings.Repeat("m", 3000))))
}
