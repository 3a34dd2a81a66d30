package asks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/slackask/slackask/interaction"
)

const carol = "U0CAROL"

// approval is a team approval drawn as a menu: a pick is a draft, Submit
// sends it (tapApproval is the same drawn as buttons).
func approval() interaction.Request {
	return interaction.Request{Questions: []interaction.Question{{
		ID: "deploy", Question: "Deploy v1.4.2?", Display: interaction.DisplayMenu,
		Options: []interaction.Option{{Label: "Yes"}, {Label: "No", Veto: true}},
	}}}
}

// On a team approval drawn as buttons (auto) a tap is the person's
// response: tapping another option replaces it, a second person's tap
// ends the ask with two responses, and a veto tap ends it at once.
func TestTeamTapIsResponse(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	in := teamInput(2, alice, bob, carol)
	in.Questions[0].Display = ""
	in.Questions[0].Options = append(in.Questions[0].Options, interaction.Option{Label: "Later"})
	ask := r.create(in)
	rec, err := r.svc.Select(ctx, click(ask, alice), 0, []int{0})
	if err != nil || rec.Status.Ended() || len(rec.Responses) != 1 || fmt.Sprint(rec.Responses[0].Answer.Answers[0].Selected) != "[Yes]" {
		t.Fatalf("alice's tap: %s, responses %+v, %v", rec.Status, rec.Responses, err)
	}
	rec, err = r.svc.Select(ctx, on(rec, alice), 0, []int{2})
	if err != nil || rec.Status.Ended() || len(rec.Responses) != 1 || fmt.Sprint(rec.Responses[0].Answer.Answers[0].Selected) != "[Later]" {
		t.Fatalf("alice's second tap: %s, responses %+v, %v", rec.Status, rec.Responses, err)
	}
	rec, err = r.svc.Select(ctx, on(rec, bob), 0, []int{0})
	if err != nil || rec.Status != interaction.StatusAnswered || rec.AnsweredBy.ID != bob || len(rec.Responses) != 2 ||
		rec.Tally["deploy"]["Yes"] != 1 || rec.Tally["deploy"]["Later"] != 1 {
		t.Fatalf("bob's tap: %s by %+v, tally %v, %v", rec.Status, rec.AnsweredBy, rec.Tally, err)
	}

	ask = r.create(in)
	rec, _ = r.svc.Select(ctx, click(ask, alice), 0, []int{0})
	rec, err = r.svc.Select(ctx, on(rec, carol), 0, []int{1})
	if err != nil || rec.Status != interaction.StatusAnswered || fmt.Sprint(rec.Answer.Answers[0].Selected) != "[No]" || rec.AnsweredBy.ID != carol {
		t.Fatalf("carol's veto tap: %s %+v, %v", rec.Status, rec.Answer, err)
	}
}

func teamInput(n int, who ...string) interaction.AskInput {
	return interaction.AskInput{Request: approval(), Responses: interaction.ResponseCount{N: n}, Responders: who}
}

// on is click at the record's current revision.
func on(rec Record, who string) Act {
	a := click(rec.Ask, who)
	a.Rev = rec.Rev
	return a
}

func (r *rig) get(id string) Record {
	r.t.Helper()
	rec, err := r.st.Get(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return rec
}

// Two of three approve: each person's pick is a draft of their own (the
// shared progress stays empty and the message is not re-rendered for a
// pick), each Submit stores a response, and the second one ends the ask
// with the team's answer, the tally and the person whose Submit ended it.
func TestTeamTwoOfThree(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ask := r.create(teamInput(2, alice, bob, carol))
	if ask.Wanted != 2 {
		t.Fatalf("responsesWanted = %d", ask.Wanted)
	}
	rec, err := r.svc.Select(ctx, click(ask, alice), 0, []int{0})
	if err != nil || rec.Rev != 1 || len(rec.Progress) != 0 || fmt.Sprint(rec.Drafts[alice]) != "[{[Yes]  false }]" {
		t.Fatalf("select: rev %d progress %v drafts %v, %v", rec.Rev, rec.Progress, rec.Drafts, err)
	}
	rec, err = r.svc.Submit(ctx, click(ask, alice), nil)
	if err != nil || rec.Status != interaction.StatusPending || len(rec.Responses) != 1 || rec.Rev != 2 || rec.Synced {
		t.Fatalf("alice's submit: %s, %d responses, rev %d, %v", rec.Status, len(rec.Responses), rec.Rev, err)
	}
	if got := rec.Responses[0]; got.User.ID != alice || fmt.Sprint(got.Answer.Answers[0].Selected) != "[Yes]" || got.At.IsZero() {
		t.Fatalf("alice's response %+v", got)
	}
	// Bob's Submit carries his pick in the message state; alice's draft is
	// not his.
	rec, err = r.svc.Submit(ctx, on(rec, bob), map[int][]int{0: {0}})
	if err != nil || rec.Status != interaction.StatusAnswered {
		t.Fatalf("bob's submit: %s %v", rec.Status, err)
	}
	if rec.AnsweredBy == nil || rec.AnsweredBy.ID != bob || fmt.Sprint(rec.Answer.Answers[0].Selected) != "[Yes]" ||
		rec.Tally["deploy"]["Yes"] != 2 || len(rec.Responses) != 2 || len(rec.Progress) != 0 || rec.Drafts != nil {
		t.Fatalf("ended: by %+v answer %+v tally %v responses %d", rec.AnsweredBy, rec.Answer, rec.Tally, len(rec.Responses))
	}
	// Carol comes too late: told it ended, nothing counted.
	if rec, err = r.svc.Submit(ctx, on(rec, carol), map[int][]int{0: {1}}); !errors.Is(err, ErrEnded) || len(rec.Responses) != 2 {
		t.Fatalf("carol's late submit: %v, %d responses", err, len(rec.Responses))
	}
}

// A response selecting a veto option ends the ask at once, answered with
// that response, whatever the count.
func TestTeamVeto(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ask := r.create(teamInput(3, alice, bob, carol))
	rec, err := r.svc.Submit(ctx, click(ask, alice), map[int][]int{0: {0}})
	if err != nil || rec.Status.Ended() {
		t.Fatalf("alice: %s %v", rec.Status, err)
	}
	rec, err = r.svc.Submit(ctx, on(rec, bob), map[int][]int{0: {1}})
	if err != nil || rec.Status != interaction.StatusAnswered || rec.AnsweredBy.ID != bob {
		t.Fatalf("bob's veto: %s by %+v, %v", rec.Status, rec.AnsweredBy, err)
	}
	if fmt.Sprint(rec.Answer.Answers[0].Selected) != "[No]" || rec.Tally["deploy"]["Yes"] != 1 || rec.Tally["deploy"]["No"] != 1 {
		t.Fatalf("answer %+v tally %v", rec.Answer, rec.Tally)
	}
}

// A person who submits again replaces their response, which moves to the
// end; the count is of people, not of Submits.
func TestTeamResubmitReplaces(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	in := teamInput(3, alice, bob, carol)
	in.Questions[0].Options[1].Veto = false
	ask := r.create(in)
	rec, _ := r.svc.Submit(ctx, click(ask, alice), map[int][]int{0: {0}})
	rec, _ = r.svc.Submit(ctx, on(rec, bob), map[int][]int{0: {0}})
	rec, err := r.svc.Submit(ctx, on(rec, alice), map[int][]int{0: {1}})
	if err != nil || rec.Status.Ended() || len(rec.Responses) != 2 {
		t.Fatalf("re-submit: %s, %d responses, %v", rec.Status, len(rec.Responses), err)
	}
	if rec.Responses[0].User.ID != bob || rec.Responses[1].User.ID != alice ||
		fmt.Sprint(rec.Responses[1].Answer.Answers[0].Selected) != "[No]" || rec.Tally["deploy"]["Yes"] != 1 {
		t.Fatalf("responses %+v tally %v", rec.Responses, rec.Tally)
	}
}

// "all" expands user groups when the ask is created; only the people it
// awaits may answer (not someone who joins the group later), and it ends
// when every one of them responded. Too many people, or a group that
// cannot be read, refuse the create.
func TestTeamAllExpandsGroups(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.surf.groups["S0OPS"] = []string{bob, alice, carol}
	ask := r.create(interaction.AskInput{Request: approval(), Responses: interaction.ResponseCount{All: true}, Responders: []string{alice, "S0OPS"}})
	rec := r.get(ask.ID)
	if fmt.Sprint(rec.Awaited) != fmt.Sprint([]string{alice, bob, carol}) || rec.Wanted != 3 {
		t.Fatalf("awaited %v wanted %d", rec.Awaited, rec.Wanted)
	}
	r.surf.mu.Lock()
	r.surf.groups["S0OPS"] = append(r.surf.groups["S0OPS"], "U0DAVE")
	r.surf.mu.Unlock()
	if _, err := r.svc.Submit(ctx, click(ask, "U0DAVE"), map[int][]int{0: {0}}); !errors.Is(err, ErrRefused) {
		t.Fatalf("dave, not awaited: %v", err)
	}
	for i, who := range []string{carol, alice, bob} {
		rec, err := r.svc.Submit(ctx, on(r.get(ask.ID), who), map[int][]int{0: {0}})
		if err != nil || rec.Status.Ended() != (i == 2) {
			t.Fatalf("%s: %s %v", who, rec.Status, err)
		}
	}
	var many []string
	for i := range interaction.MaxResponders + 1 {
		many = append(many, fmt.Sprintf("U0P%03d", i))
	}
	r.surf.groups["S0BIG"] = many
	for name, c := range map[string]struct {
		group string
		code  interaction.Code
	}{"51 people": {"S0BIG", interaction.InvalidQuestion}, "unknown group": {"S0NONE", interaction.SlackError}} {
		_, err := r.svc.Create(ctx, interaction.AskInput{Request: approval(), Responses: interaction.ResponseCount{All: true}, Responders: []string{c.group}})
		if interaction.ErrorCode(err) != c.code {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// When the Nth and the (N+1)th and more submit at the same instant,
// exactly N responses count and the ask ends once; the others are told
// it ended.
func TestTeamExactlyN(t *testing.T) {
	r := newRig(t)
	r.run()
	ctx := context.Background()
	var people []string
	for i := range 10 {
		people = append(people, fmt.Sprintf("U0P%03d", i))
	}
	in := teamInput(3, people...)
	in.Questions[0].Options[1].Veto = false
	ask := r.create(in)
	var counted, late atomic.Int64
	var wg sync.WaitGroup
	for _, p := range people {
		wg.Go(func() {
			_, err := r.svc.Submit(ctx, click(ask, p), map[int][]int{0: {0}})
			switch {
			case err == nil:
				counted.Add(1)
			case errors.Is(err, ErrEnded):
				late.Add(1)
			default:
				t.Errorf("%s: %v", p, err)
			}
		})
	}
	wg.Wait()
	rec := r.get(ask.ID)
	if counted.Load() != 3 || late.Load() != 7 || len(rec.Responses) != 3 || r.ended.Load() != 1 || rec.Status != interaction.StatusAnswered {
		t.Fatalf("%d counted, %d late, %d responses, %d ends, %s", counted.Load(), late.Load(), len(rec.Responses), r.ended.Load(), rec.Status)
	}
}

// At the deadline, onTimeout "expire" keeps the partial responses on the
// expired ask; "answer" ends it answered with them (answeredBy unset), or
// expired when none came.
func TestTeamOnTimeout(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	deadline := ending{status: interaction.StatusExpired, err: interaction.Errorf(interaction.AskTimeout, "nobody answered before the deadline")}
	for _, c := range []struct {
		on       interaction.OnTimeout
		submit   bool
		want     interaction.Status
		wantResp int
	}{
		{"", true, interaction.StatusExpired, 1},
		{interaction.OnTimeoutExpire, true, interaction.StatusExpired, 1},
		{interaction.OnTimeoutAnswer, true, interaction.StatusAnswered, 1},
		{interaction.OnTimeoutAnswer, false, interaction.StatusExpired, 0},
	} {
		in := teamInput(2, alice, bob)
		in.OnTimeout = c.on
		ask := r.create(in)
		if c.submit {
			if _, err := r.svc.Submit(ctx, click(ask, alice), map[int][]int{0: {0}}); err != nil {
				t.Fatal(err)
			}
		}
		rec, err := r.svc.end(ctx, ask.ID, deadline)
		if err != nil || rec.Status != c.want || len(rec.Responses) != c.wantResp {
			t.Fatalf("%q: %s with %d responses, %v", c.on, rec.Status, len(rec.Responses), err)
		}
		switch c.want {
		case interaction.StatusAnswered:
			if rec.AnsweredBy != nil || rec.Error != nil || fmt.Sprint(rec.Answer.Answers[0].Selected) != "[Yes]" || rec.Tally["deploy"]["Yes"] != 1 {
				t.Fatalf("%q: answered %+v by %+v, tally %v", c.on, rec.Answer, rec.AnsweredBy, rec.Tally)
			}
		default:
			if interaction.ErrorCode(rec.Error) != interaction.AskTimeout || rec.Answer != nil {
				t.Fatalf("%q: error %v answer %+v", c.on, rec.Error, rec.Answer)
			}
			// The error says what happened: nobody, or too few, answered.
			want := "nobody answered before the deadline"
			if c.wantResp > 0 {
				want = fmt.Sprintf("only %d of the 2 responses wanted came in before the deadline", c.wantResp)
			}
			if rec.Error.Message != want {
				t.Fatalf("%q: error message %q, want %q", c.on, rec.Error.Message, want)
			}
		}
	}
}

// One person cannot cancel a team's ask; the caller can withdraw it, and
// the responses stay on the withdrawn ask.
func TestTeamNoCancel(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ask := r.create(teamInput(2, alice, bob))
	rec, _ := r.svc.Submit(ctx, click(ask, alice), map[int][]int{0: {0}})
	if _, err := r.svc.Cancel(ctx, on(rec, bob)); !errors.Is(err, ErrNoCancel) {
		t.Fatalf("cancel: %v", err)
	}
	if got := r.get(ask.ID); got.Status != interaction.StatusPending {
		t.Fatalf("status %s", got.Status)
	}
	got, err := r.svc.Withdraw(ctx, ask.ID)
	if err != nil || got.Status != interaction.StatusAborted || len(got.Responses) != 1 {
		t.Fatalf("withdraw: %s, %d responses, %v", got.Status, len(got.Responses), err)
	}
}

// Each person's skips and text are theirs: bob's response holds none of
// alice's draft, and the shared progress the message renders stays empty.
func TestTeamDraftsArePrivate(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ask := r.create(interaction.AskInput{Request: twoQuestions(), Responses: interaction.ResponseCount{N: 2}, Responders: []string{alice, bob}})
	if _, err := r.svc.Other(ctx, click(ask, alice), 0, "maybe"); err != nil {
		t.Fatal(err)
	}
	rec, err := r.svc.Skip(ctx, click(ask, alice), 1)
	if err != nil || rec.Rev != 1 || len(rec.Progress) != 0 || rec.Status.Ended() {
		t.Fatalf("alice's drafts: rev %d progress %v status %s %v", rec.Rev, rec.Progress, rec.Status, err)
	}
	rec, err = r.svc.Submit(ctx, click(ask, bob), map[int][]int{0: {0}, 1: {1}})
	if err != nil || len(rec.Responses) != 1 {
		t.Fatalf("bob: %v", err)
	}
	if got := rec.Responses[0].Answer; got.Answers[0].Custom != "" || fmt.Sprint(got.Answers[0].Selected, got.Answers[1].Selected) != "[yes] [no]" {
		t.Fatalf("bob's response %+v", got)
	}
	rec, err = r.svc.Submit(ctx, on(rec, alice), nil)
	if err != nil || rec.Status != interaction.StatusAnswered {
		t.Fatalf("alice: %s %v", rec.Status, err)
	}
	if got := rec.Responses[1].Answer; got.Answers[0].Custom != "maybe" || !got.Answers[1].Skipped() {
		t.Fatalf("alice's response %+v", got)
	}
	// The team's answer: "yes" has the only vote on a; alice's text is not
	// a vote; on b "no" has the only vote.
	if fmt.Sprint(rec.Answer.Answers[0].Selected, rec.Answer.Answers[1].Selected) != "[yes] [no]" {
		t.Fatalf("team answer %+v", rec.Answer)
	}
}

// A required question has no Skip and a Submit leaving it unanswered is
// refused naming it, changing nothing; a question that allows no other
// text refuses text. Both hold for a one-response ask too.
func TestRequiredAndNoOther(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	no := false
	req := twoQuestions()
	req.Questions[0].Required = true
	req.Questions[1].AllowOther = &no
	for _, n := range []int{1, 2} {
		ask := r.create(interaction.AskInput{Request: req, Responses: interaction.ResponseCount{N: n}, Responders: []string{alice, bob}})
		if _, err := r.svc.Skip(ctx, click(ask, alice), 0); !errors.Is(err, ErrBadChoice) {
			t.Fatalf("n=%d skip of a required question: %v", n, err)
		}
		if _, err := r.svc.Other(ctx, click(ask, alice), 1, "teal"); !errors.Is(err, ErrBadChoice) {
			t.Fatalf("n=%d text on a no-other question: %v", n, err)
		}
		before := r.get(ask.ID)
		_, err := r.svc.Submit(ctx, click(ask, alice), map[int][]int{1: {0}})
		var re *RequiredError
		if !errors.As(err, &re) || fmt.Sprint(re.Questions) != "[0]" || !errors.Is(err, ErrRequired) {
			t.Fatalf("n=%d submit without the required question: %v", n, err)
		}
		if after := r.get(ask.ID); after.Version != before.Version {
			t.Fatalf("n=%d: the refused submit changed the record", n)
		}
		rec, err := r.svc.Submit(ctx, click(ask, alice), map[int][]int{0: {0}, 1: {0}})
		if err != nil || len(rec.Responses)+len(rec.Progress) == 0 {
			t.Fatalf("n=%d full submit: %v", n, err)
		}
	}
}

// An ask cannot wait for more responses than the people who may give
// them, when that is known at creation: a DM has one, a list of users as
// many as it names.
func TestTeamMoreResponsesThanPeople(t *testing.T) {
	r := newRig(t)
	for name, in := range map[string]interaction.AskInput{
		"dm":    {Request: approval(), User: alice, Responses: interaction.ResponseCount{N: 2}},
		"users": teamInput(3, alice, bob, alice),
	} {
		if _, err := r.svc.Create(context.Background(), in); interaction.ErrorCode(err) != interaction.InvalidQuestion {
			t.Errorf("%s: %v", name, err)
		}
	}
	r.surf.groups["S0OPS"] = []string{alice}
	r.create(teamInput(3, alice, "S0OPS")) // a group's size is not known until someone acts
}
