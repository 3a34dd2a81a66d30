package blocks

import (
	"fmt"
	"strings"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// Fixtures shared by the golden, limit and escaping tests.

const injection = "<!channel> <@U123> <#C1|x> <https://evil|click> & <!here>"

var (
	t0      = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	expires = t0.Add(30 * time.Minute)
	agent   = &interaction.Agent{ID: "deploy-bot", Name: "Deploy Bot"}
)

func opts(labels ...string) []interaction.Option {
	out := make([]interaction.Option, len(labels))
	for i, l := range labels {
		out[i] = interaction.Option{Label: l}
	}
	return out
}

func pendingView(r interaction.Request) View {
	return View{
		AskID: "a1B2c3", Rev: 1, Request: r, Status: interaction.StatusPending,
		Responders: []string{"U111", "S222"}, Mention: []string{"U111"}, ExpiresAt: &expires,
	}
}

func oneTapRequest() interaction.Request {
	return interaction.Request{Agent: agent, Questions: []interaction.Question{{
		ID: "env", Header: "Deploy target", Question: "Which environment should I deploy to?",
		Options: []interaction.Option{
			{Label: "staging", Description: "safe, resets nightly"},
			{Label: "production", Description: "customers see it at once"},
			{Label: "both"},
		},
	}}}
}

func batchRequest() interaction.Request {
	return interaction.Request{Agent: agent, Questions: []interaction.Question{
		{ID: "db", Header: "Database", Question: "Which database should the service use?",
			Detail: "We need transactions and JSON columns.", Options: []interaction.Option{
				{Label: "PostgreSQL", Description: "what we run elsewhere"},
				{Label: "SQLite", Description: "one file, no server"},
			}},
		{ID: "regions", Header: "Regions", Question: "Where should it run?", MultiSelect: true,
			Options: opts("eu-west-1", "us-east-1", "ap-southeast-2")},
		{ID: "name", Question: "What should the service be called?"},
	}}
}

func progressRequest() interaction.Request {
	r := batchRequest()
	r.Questions = append(r.Questions, interaction.Question{ID: "tests", Question: "Run the slow tests?", Options: opts("yes", "no")})
	return r
}

func progressView() View {
	v := pendingView(progressRequest())
	v.Rev = 7
	v.Progress = []interaction.Progress{
		{Selected: []string{"SQLite"}},
		{Selected: []string{"us-east-1", "eu-west-1", "unknown label"}},
		{Custom: "orders-api, or <@U999> decides & signs off"},
		{Skipped: true},
	}
	return v
}

// longString repeats a sentence up to n runes.
func longString(prefix string, n int) string {
	s := strings.Repeat(prefix+" lorem ipsum dolor sit amet, consectetur adipiscing elit. ", n/40+1)
	return string([]rune(s)[:n])
}

func manyOptionsRequest() interaction.Request {
	q := interaction.Question{ID: "pick", Header: "Pick one", Question: "Which of these 100 long options?"}
	for j := range slackid.MaxOptions {
		q.Options = append(q.Options, interaction.Option{
			Label:       longString(fmt.Sprintf("option %03d", j), 200),
			Description: longString("description", 1000),
		})
	}
	return interaction.Request{Agent: agent, Questions: []interaction.Question{q}}
}

func hugeRequest() interaction.Request {
	var r interaction.Request
	r.Agent = &interaction.Agent{ID: strings.Repeat("i", interaction.MaxAgentNameLen), Name: strings.Repeat("N", interaction.MaxAgentNameLen)}
	for i := range slackid.MaxQuestions {
		r.Questions = append(r.Questions, interaction.Question{
			ID:       fmt.Sprintf("q%d", i),
			Header:   longString("header", interaction.MaxHeaderLen),
			Question: longString(fmt.Sprintf("question %d", i), interaction.MaxQuestionLen),
			Detail:   longString("detail", interaction.MaxDetailLen),
			Options:  opts("yes", "no", "maybe"),
		})
	}
	return r
}

func hugeView() View {
	v := pendingView(hugeRequest())
	for i := range v.Request.Questions {
		p := interaction.Progress{Custom: longString("custom", 3000)}
		if i%2 == 1 {
			p = interaction.Progress{Skipped: true}
		}
		v.Progress = append(v.Progress, p)
	}
	return v
}

const plan = `1. Stop the workers.
2. Run migration 0042 (adds *orders.archived_at*).
3. Backfill in batches of 10k rows; roughly 40 minutes.
4. Start the workers & watch the error rate.`

func planRequest() interaction.Request {
	return interaction.Request{Agent: agent, Questions: []interaction.Question{{
		ID: "plan", Header: "Migration plan", Question: "May I run this migration plan?", Detail: plan,
		Options: []interaction.Option{
			{Label: "Approve", Description: "run it now"},
			{Label: "Reject"},
			{Label: "Revise", Description: "tell me what to change"},
		},
		Intent: &interaction.Intent{Kind: interaction.IntentPlanReview, Approve: "Approve"},
	}}}
}

func planBatchRequest() interaction.Request {
	r := planRequest()
	r.Questions = append(r.Questions, interaction.Question{ID: "when", Question: "When?", Options: opts("now", "tonight")})
	return r
}

func injectionRequest() interaction.Request {
	return interaction.Request{
		Agent: &interaction.Agent{ID: injection, Name: "<!everyone> bot"},
		Questions: []interaction.Question{{
			ID: "x", Header: injection, Question: "Pick " + injection, Detail: "detail " + injection,
			Options: []interaction.Option{{Label: injection, Description: injection}, {Label: "<@U123>"}},
		}, {
			ID: "y", Question: injection, Detail: injection, MultiSelect: true,
			Options: []interaction.Option{{Label: "a " + injection}, {Label: "b " + injection}},
			Intent:  &interaction.Intent{Kind: interaction.IntentPlanReview, Approve: "a " + injection},
		}},
	}
}

func injectionView() View {
	v := pendingView(injectionRequest())
	v.Responders = []string{"U111", injection, "<@U999>", "S01"}
	v.Mention = []string{"U111", "<!channel>", "S01", "C123", injection}
	v.Progress = []interaction.Progress{{Custom: injection}, {Selected: []string{"a " + injection}}}
	return v
}

func answeredView() View {
	v := pendingView(batchRequest())
	v.Rev = 9
	v.Status = interaction.StatusAnswered
	v.Answer = &interaction.Answer{Answers: []interaction.AnswerItem{
		{ID: "db", Selected: []string{"PostgreSQL"}},
		{ID: "regions", Selected: []string{"eu-west-1", "us-east-1"}},
		{ID: "name", Custom: "orders-api"},
	}}
	v.AnsweredBy = &interaction.User{ID: "U111", Name: "alice"}
	v.EndedAt = t0.Add(5 * time.Minute)
	return v
}

func endedViews() map[string]View {
	answered := answeredView()
	skipped := answeredView()
	skipped.Answer = &interaction.Answer{Answers: []interaction.AnswerItem{
		{ID: "db", Selected: []string{}}, {ID: "regions", Selected: []string{}}, {ID: "name", Selected: []string{}},
	}}
	elsewhere := answeredView()
	elsewhere.Note = "answered elsewhere <!here>"
	cancelled := answeredView()
	cancelled.Status, cancelled.Answer = interaction.StatusCancelled, nil
	cancelled.AnsweredBy = &interaction.User{ID: "U222"}
	cancelled.Error = interaction.Errorf(interaction.AskCancelled, "a person cancelled the question")
	aborted := answeredView()
	aborted.Status, aborted.Answer, aborted.AnsweredBy = interaction.StatusAborted, nil, nil
	aborted.Error = interaction.Errorf(interaction.AskAborted, "the caller withdrew the question")
	expired := aborted
	expired.Status, expired.EndedAt = interaction.StatusExpired, expires
	expired.Error = interaction.Errorf(interaction.AskTimeout, "nobody answered before the deadline")
	injected := injectionView()
	injected.Status = interaction.StatusAnswered
	injected.Answer = &interaction.Answer{Answers: []interaction.AnswerItem{
		{ID: "x", Custom: injection}, {ID: "y", Selected: []string{"a " + injection, "b " + injection}},
	}}
	injected.AnsweredBy = &interaction.User{ID: "<!channel>", Name: injection}
	injected.EndedAt = t0
	injected.Note = injection
	return map[string]View{
		"ended_answered": answered, "ended_skipped": skipped, "ended_note": elsewhere,
		"ended_cancelled": cancelled, "ended_aborted": aborted, "ended_expired": expired,
		"ended_injection": injected,
	}
}

// messageCases are the views of the golden files.
func messageCases() map[string]View {
	anyone := pendingView(oneTapRequest())
	anyone.Responders, anyone.Mention, anyone.ExpiresAt, anyone.Request.Agent = nil, nil, nil, nil
	cases := map[string]View{
		"onetap":          pendingView(oneTapRequest()),
		"onetap_anyone":   anyone,
		"batch":           pendingView(batchRequest()),
		"progress":        progressView(),
		"options100":      pendingView(manyOptionsRequest()),
		"huge":            hugeView(),
		"plan_review":     pendingView(planRequest()),
		"plan_batch":      pendingView(planBatchRequest()),
		"injection":       injectionView(),
		"ended_plan":      endedPlan(),
		"ended_huge":      endedHuge(),
		"ended_unknown":   {AskID: "z", Request: oneTapRequest(), Status: "weird", Error: interaction.Errorf(interaction.SlackError, "x")},
		"pending_no_opts": pendingView(interaction.Request{Questions: []interaction.Question{{ID: "free", Question: "Anything else?"}}}),
	}
	for k, v := range endedViews() {
		cases[k] = v
	}
	return cases
}

func endedPlan() View {
	v := pendingView(planRequest())
	v.Status = interaction.StatusAnswered
	v.Answer = &interaction.Answer{Answers: []interaction.AnswerItem{{ID: "plan", Selected: []string{"Approve"}}}}
	v.AnsweredBy = &interaction.User{ID: "W0BOSS"}
	v.EndedAt = t0
	return v
}

func endedHuge() View {
	v := hugeView()
	v.Status = interaction.StatusAnswered
	v.Answer = &interaction.Answer{}
	for _, q := range v.Request.Questions {
		v.Answer.Answers = append(v.Answer.Answers, interaction.AnswerItem{ID: q.ID, Custom: longString("answer", 20000)})
	}
	v.EndedAt = t0
	return v
}

type modalCase struct {
	v     View
	q     int
	other bool
}

// modalCases are the modals of the golden files.
func modalCases() map[string]modalCase {
	free := progressView()
	return map[string]modalCase{
		"modal_other":           {pendingView(batchRequest()), 0, true},
		"modal_answer_prefill":  {free, 2, true},
		"modal_other_injection": {injectionView(), 0, true},
		"modal_other_huge":      {hugeView(), 0, true},
		"modal_other_missing":   {free, 9, true},
		"modal_details_huge":    {hugeView(), 9, false},
		"modal_details_plan":    {pendingView(planRequest()), 0, false},
		"modal_details_options": {pendingView(manyOptionsRequest()), 0, false},
		"modal_details_inject":  {injectionView(), 1, false},
		"modal_details_missing": {free, -1, false},
	}
}

func (mc modalCase) render() any {
	if mc.other {
		return OtherModal(mc.v, mc.q, `{"ask":"a1B2c3","q":`+fmt.Sprint(mc.q)+`}`)
	}
	return DetailsModal(mc.v, mc.q, "a1B2c3:"+fmt.Sprint(mc.q))
}

// drawable is what the renderer is held to: requests interaction.Validate
// and Slack's limits (slackid.CheckRequest) both accept.
func drawable(r interaction.Request) error {
	if err := interaction.Validate(r); err != nil {
		return err
	}
	return slackid.CheckRequest(r)
}
