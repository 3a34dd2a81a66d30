package blocks

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
)

// FuzzRequest: every request that Validate accepts renders — pending, with
// progress, and in every ended state — to a message and modals that pass
// the Block Kit schema and Slack's limits; every request it refuses gets
// one of the seam's codes. Nothing panics.
func FuzzRequest(f *testing.F) {
	for _, r := range []interaction.Request{oneTapRequest(), batchRequest(), manyOptionsRequest(), planRequest(), injectionRequest()} {
		b, _ := json.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte(`{"questions":[]}`))
	f.Add([]byte(`{"questions":[{"id":"a","question":"<!channel> & <@U1>","options":[{"label":"x"},{"label":"x"}]}]}`))
	f.Add([]byte(`{"questions":[{"id":"p","question":"Plan?","detail":"1. step","options":[{"label":"Go"}],"intent":{"kind":"plan-review","approve":"Go"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r interaction.Request
		if json.Unmarshal(data, &r) != nil {
			return
		}
		if err := drawable(r); err != nil {
			switch interaction.ErrorCode(err) {
			case interaction.EmptyQuestions, interaction.InvalidQuestion, interaction.BadIntent:
			default:
				t.Fatalf("invalid request got code %q: %v", interaction.ErrorCode(err), err)
			}
			return
		}
		for name, v := range fuzzViews(r) {
			text, bs := Message(v)
			reportProblems(t, checkMessage(t, name, v, text, bs))
			for q := range r.Questions {
				reportProblems(t, checkModal(t, name+" other", OtherModal(v, q, "meta")))
				reportProblems(t, checkModal(t, name+" details", DetailsModal(v, q, "meta")))
			}
		}
	})
}

// fuzzViews is r pending, pending with progress on every question, and
// answered, cancelled and expired.
func fuzzViews(r interaction.Request) map[string]View {
	progress := make([]interaction.Progress, len(r.Questions))
	for i, q := range r.Questions {
		switch {
		case len(q.Options) > 0 && i%3 == 0:
			progress[i].Selected = []string{q.Options[len(q.Options)-1].Label}
		case i%3 == 1:
			progress[i].Custom = q.Question + " <!here> & more"
		default:
			progress[i].Skipped = true
		}
	}
	ans := interaction.AnswerFrom(r, progress)
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	base := View{AskID: "afuzz", Rev: 3, Request: r, Status: interaction.StatusPending, Responders: []string{"U1", "S2"}, ExpiresAt: &at}
	withProgress := base
	withProgress.Progress = progress
	answered := withProgress
	answered.Status, answered.Answer, answered.AnsweredBy, answered.EndedAt = interaction.StatusAnswered, &ans, &interaction.User{ID: "U1", Name: "<b>"}, at
	cancelled := base
	cancelled.Status, cancelled.EndedAt, cancelled.Error = interaction.StatusCancelled, at, interaction.Errorf(interaction.AskCancelled, "x")
	expired := base
	expired.Status, expired.EndedAt = interaction.StatusExpired, at
	return map[string]View{"pending": base, "progress": withProgress, "answered": answered, "cancelled": cancelled, "expired": expired}
}
