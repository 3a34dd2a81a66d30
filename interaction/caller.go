package interaction

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Caller is who calls an AskService through a front door with a scoped API
// key. A context without one (CallerFrom returns nil) is the all-powerful
// caller: the server's own token, or no token on loopback.
type Caller struct {
	// Key is the id of the API key; it owns the asks created with it.
	Key string
	// Name is the key's name, for log lines.
	Name string
	// Workspaces, when not empty, are the team (T…) or Enterprise Grid
	// organization (E…) ids the key may ask in.
	Workspaces []string
	// Channels, when not empty, are the conversations the key may post in:
	// conversation ids (C…, G…, D…), and user ids (U…, W…) for DMs to them.
	Channels []string
	// Responders, when not empty, are the users and user groups whose
	// answers the key may ask for; an ask that names none takes these.
	Responders []string
}

type callerKey struct{}

// WithCaller returns ctx carrying c; a nil c leaves ctx as it is.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries, or nil for the all-powerful one.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// Owns reports whether the caller may see an ask owned by owner (the id of
// the key that created it; empty for asks made without a key). The
// all-powerful caller (nil) owns every ask; a key only its own.
func (c *Caller) Owns(owner string) bool {
	return c == nil || c.Key == owner
}

// Owner is the owner to record on an ask the caller creates: its key's id,
// or empty for the all-powerful caller.
func (c *Caller) Owner() string {
	if c == nil {
		return ""
	}
	return c.Key
}

// Workspace returns the workspace an ask that names ws goes to: ws, or,
// when ws is empty, the key's only workspace. FORBIDDEN when ws is outside
// the key's workspaces; INVALID_QUESTION when ws is empty and the key has
// several (the ask must say which).
func (c *Caller) Workspace(ws string) (string, error) {
	if c == nil || len(c.Workspaces) == 0 {
		return ws, nil
	}
	switch {
	case ws == "" && len(c.Workspaces) == 1:
		return c.Workspaces[0], nil
	case ws == "":
		return "", Errorf(InvalidQuestion, "workspace: this API key may ask in %s; name one", strings.Join(c.Workspaces, ", "))
	case !slices.Contains(c.Workspaces, ws):
		return "", Errorf(Forbidden, "workspace %s: this API key may ask only in %s", ws, strings.Join(c.Workspaces, ", "))
	}
	return ws, nil
}

// DefaultResponders returns the responders of an ask that names none: the
// key's responders when it has a responder scope, else nil (the server's
// default applies).
func (c *Caller) DefaultResponders() []string {
	if c == nil {
		return nil
	}
	return slices.Clone(c.Responders)
}

// Admit checks an ask's conversation and responders against the key's
// scope, with the defaults already applied: channel is the conversation it
// posts in (empty for a DM), user the DM's user, responders who may
// answer. FORBIDDEN names the first thing outside the scope.
func (c *Caller) Admit(channel, user string, responders []string) error {
	if c == nil {
		return nil
	}
	if len(c.Channels) > 0 {
		switch {
		case user != "" && !slices.Contains(c.Channels, user):
			return Errorf(Forbidden, "user %s: this API key may not send DMs to them (its channels: %s)", user, strings.Join(c.Channels, ", "))
		case user == "" && !slices.Contains(c.Channels, channel):
			return Errorf(Forbidden, "channel %s: this API key may ask only in %s", channel, strings.Join(c.Channels, ", "))
		}
	}
	if len(c.Responders) > 0 {
		if user != "" && !slices.Contains(c.Responders, user) {
			return Errorf(Forbidden, "user %s: not among this API key's responders (%s)", user, strings.Join(c.Responders, ", "))
		}
		for _, r := range responders {
			if !slices.Contains(c.Responders, r) {
				return Errorf(Forbidden, "responder %s: not among this API key's responders (%s)", r, strings.Join(c.Responders, ", "))
			}
		}
	}
	return nil
}

// AdmitReach checks what an ask reaches beyond its message against the
// key's scope: each escalation step's responders (as responders) and
// channel (as a channel), and, with notify "dm" (the ask's or a step's),
// the DM each person gets: under a channel scope every such person must
// be listed as a user the key may DM, and a group (isGroup, as the chat
// surface tells), whose members cannot be listed, is refused. FORBIDDEN
// names the first thing outside.
func (c *Caller) AdmitReach(notify Notify, steps []EscalationStep, responders []string, isGroup func(id string) bool) error {
	if c == nil {
		return nil
	}
	dms := func(at string, n Notify, people []string) error {
		if n != NotifyDM || len(c.Channels) == 0 {
			return nil
		}
		for _, p := range people {
			if isGroup(p) {
				return Errorf(Forbidden, "%snotify dm to user group %s: this API key may DM only %s", at, p, strings.Join(c.Channels, ", "))
			}
			if !slices.Contains(c.Channels, p) {
				return Errorf(Forbidden, "%snotify dm to %s: this API key may not send DMs to them (its channels: %s)", at, p, strings.Join(c.Channels, ", "))
			}
		}
		return nil
	}
	if err := dms("", notify, responders); err != nil {
		return err
	}
	for i, st := range steps {
		if len(c.Responders) > 0 {
			for _, r := range st.Responders {
				if !slices.Contains(c.Responders, r) {
					return Errorf(Forbidden, "escalation[%d] responder %s: not among this API key's responders (%s)", i, r, strings.Join(c.Responders, ", "))
				}
			}
		}
		if st.Channel != "" && len(c.Channels) > 0 && !slices.Contains(c.Channels, st.Channel) {
			return Errorf(Forbidden, "escalation[%d] channel %s: this API key may ask only in %s", i, st.Channel, strings.Join(c.Channels, ", "))
		}
		n := st.Notify
		if n == "" {
			n = notify
		}
		if err := dms(fmt.Sprintf("escalation[%d] ", i), n, st.Responders); err != nil {
			return err
		}
	}
	return nil
}

// IdempotencyKey returns the key under which an ask's idempotencyKey k is
// kept for this caller: a key's own namespace, so that two keys using the
// same idempotencyKey never get each other's ask.
func (c *Caller) IdempotencyKey(k string) string {
	if c == nil || k == "" {
		return k
	}
	return "key:" + c.Key + ":" + k
}
