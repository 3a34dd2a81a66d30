package asks

import (
	"context"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
)

// A scoped API key (the ctx's interaction.Caller) asks only inside its
// scope (403 FORBIDDEN otherwise, nothing posted) and sees only its own
// asks: another key's are NOT_FOUND for Get, Wait and Withdraw and absent
// from List, and an idempotencyKey is the key's own.
func TestKeyScopesAndOwnership(t *testing.T) {
	r := newRig(t)
	r.run()
	ctx := context.Background()
	ka := interaction.WithCaller(ctx, &interaction.Caller{Key: "ka", Workspaces: []string{team}, Channels: []string{chanID, alice}, Responders: []string{alice, "S0OPS"}})
	kb := interaction.WithCaller(ctx, &interaction.Caller{Key: "kb"})
	q := twoQuestions()

	for name, c := range map[string]struct {
		ctx  context.Context
		in   interaction.AskInput
		code interaction.Code
	}{
		"channel outside":     {ka, interaction.AskInput{Request: q, Channel: "C0OTHER", Responders: []string{alice}}, interaction.Forbidden},
		"default channel ok":  {ka, interaction.AskInput{Request: q, Responders: []string{alice}}, ""},
		"responder outside":   {ka, interaction.AskInput{Request: q, Responders: []string{alice, bob}}, interaction.Forbidden},
		"group outside":       {ka, interaction.AskInput{Request: q, Responders: []string{"S0DEV"}}, interaction.Forbidden},
		"DM to a listed user": {ka, interaction.AskInput{Request: q, User: alice}, ""},
		"DM outside":          {ka, interaction.AskInput{Request: q, User: bob}, interaction.Forbidden},
		"workspace outside":   {ka, interaction.AskInput{Request: q, Workspace: "T0ELSE"}, interaction.Forbidden},
		"workspace named":     {ka, interaction.AskInput{Request: q, Workspace: team}, ""},
		"bad workspace id":    {kb, interaction.AskInput{Request: q, Workspace: "acme"}, interaction.InvalidQuestion},
		"server elsewhere":    {kb, interaction.AskInput{Request: q, Workspace: "T0ELSE"}, interaction.InvalidQuestion},
		"escalate outside":    {ka, interaction.AskInput{Request: q, Responders: []string{alice}, Escalation: []interaction.EscalationStep{{After: interaction.Duration(time.Hour), Responders: []string{bob}}}}, interaction.Forbidden},
		"escalate elsewhere":  {ka, interaction.AskInput{Request: q, Responders: []string{alice}, Escalation: []interaction.EscalationStep{{After: interaction.Duration(time.Hour), Responders: []string{alice}, Channel: "C0OTHER"}}}, interaction.Forbidden},
		"escalate inside":     {ka, interaction.AskInput{Request: q, Responders: []string{alice}, Escalation: []interaction.EscalationStep{{After: interaction.Duration(time.Hour), Responders: []string{"S0OPS"}}}}, ""},
		"notify dm a group":   {ka, interaction.AskInput{Request: q, Responders: []string{"S0OPS"}, Notify: interaction.NotifyDM}, interaction.Forbidden},
		"notify dm listed":    {ka, interaction.AskInput{Request: q, Responders: []string{alice}, Notify: interaction.NotifyDM}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			before := len(r.surf.posts)
			_, err := r.svc.Create(c.ctx, c.in)
			if got := interaction.ErrorCode(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if c.code != "" && len(r.surf.posts) != before {
				t.Errorf("a refused ask was posted")
			}
		})
	}

	// An ask that names no responders takes the key's.
	a, err := r.svc.Create(ka, interaction.AskInput{Request: q})
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := r.st.Get(ctx, a.ID); rec.Owner != "ka" || len(rec.Responders) != 2 || rec.Responders[0] != alice {
		t.Errorf("record owner %q responders %v; want ka and the key's responders", rec.Owner, rec.Responders)
	}
	b, err := r.svc.Create(kb, interaction.AskInput{Request: q})
	if err != nil {
		t.Fatal(err)
	}
	server, err := r.svc.Create(ctx, interaction.AskInput{Request: q})
	if err != nil {
		t.Fatal(err)
	}

	for _, id := range []string{b.ID, server.ID} {
		if _, err := r.svc.Get(ka, id); interaction.ErrorCode(err) != interaction.NotFound {
			t.Errorf("ka Get(%s) = %v, want NOT_FOUND", id, err)
		}
		if _, err := r.svc.Wait(ka, id); interaction.ErrorCode(err) != interaction.NotFound {
			t.Errorf("ka Wait(%s) = %v, want NOT_FOUND", id, err)
		}
		if _, err := r.svc.Withdraw(ka, id); interaction.ErrorCode(err) != interaction.NotFound {
			t.Errorf("ka Withdraw(%s) = %v, want NOT_FOUND", id, err)
		}
	}
	if got, _ := r.svc.Get(ctx, b.ID); got.Status != interaction.StatusPending {
		t.Errorf("another key's withdrawal ended b: %s", got.Status)
	}
	if _, err := r.svc.Get(ka, a.ID); err != nil {
		t.Errorf("ka Get(own) = %v", err)
	}
	if got, err := r.svc.Get(ctx, a.ID); err != nil || got.ID != a.ID {
		t.Errorf("the server token Get(ka's ask) = %v", err)
	}
	list, err := r.svc.List(kb, interaction.ListFilter{})
	if err != nil || len(list) != 1 || list[0].ID != b.ID {
		t.Errorf("kb List = %d asks (%v), want only its own", len(list), err)
	}
	if all, _ := r.svc.List(ctx, interaction.ListFilter{}); len(all) < 3 {
		t.Errorf("the server token lists %d asks, want every one", len(all))
	}
	if w, err := r.svc.Withdraw(ka, a.ID); err != nil || w.Status != interaction.StatusAborted {
		t.Errorf("ka Withdraw(own) = %s, %v", w.Status, err)
	}

	// One idempotencyKey, two keys: two asks, neither sees the other's.
	in := interaction.AskInput{Request: q, IdempotencyKey: "deploy-42"}
	x, err := r.svc.Create(kb, in)
	if err != nil {
		t.Fatal(err)
	}
	kc := interaction.WithCaller(ctx, &interaction.Caller{Key: "kc"})
	y, created, err := r.svc.CreateIdempotent(kc, in)
	if err != nil || !created || y.ID == x.ID {
		t.Errorf("kc with kb's idempotencyKey: created %v, same ask %v, %v", created, y.ID == x.ID, err)
	}
	if again, created, _ := r.svc.CreateIdempotent(kb, in); created || again.ID != x.ID {
		t.Errorf("kb's retry: created %v, want its own ask back", created)
	}
}
