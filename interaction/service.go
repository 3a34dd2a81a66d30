package interaction

import (
	"context"
	"sync"
)

// Provider asks people questions and returns their answer. Ask blocks until
// the ask ends or ctx is done. It returns an *Error (possibly wrapped):
// ASK_ABORTED when ctx ends first, ASK_CANCELLED when a person cancels,
// ASK_TIMEOUT when the deadline passes, SLACK_ERROR when Slack refuses, or a
// validation code. Implementations are safe for concurrent use.
type Provider interface {
	Ask(ctx context.Context, r Request) (Answer, error)
}

// ProviderFunc adapts a function to Provider.
type ProviderFunc func(ctx context.Context, r Request) (Answer, error)

// Ask calls f.
func (f ProviderFunc) Ask(ctx context.Context, r Request) (Answer, error) { return f(ctx, r) }

// Service holds the one active Provider of a process, for Go programs that
// embed slackask and ask through the seam: register the lifecycle
// (asks.Service is a Provider) and call Ask, which checks the request
// before handing it over. It enforces the seam's rule that only one
// provider is active (DUPLICATE_PROVIDER). The slackask binary does not use
// it: its front doors (HTTP, MCP, dsh) call the lifecycle as an AskService,
// which creates, waits and withdraws asks itself. The zero value is ready
// to use and safe for concurrent use.
type Service struct {
	mu       sync.Mutex
	provider Provider
	token    *int // identifies the current registration
}

// Register makes p the active provider. It returns a func that unregisters
// p (idempotent, and harmless once another provider has replaced it), or a
// DUPLICATE_PROVIDER *Error when a provider is already registered.
func (s *Service) Register(p Provider) (unregister func(), err error) {
	if p == nil {
		return nil, Errorf(NoProvider, "register: provider is nil")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provider != nil {
		return nil, Errorf(DuplicateProvider, "register: a provider is already active")
	}
	tok := new(int)
	s.provider, s.token = p, tok
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.token == tok {
			s.provider, s.token = nil, nil
		}
	}, nil
}

// Ask checks, in order, that ctx is not done (ASK_ABORTED), that the request
// has questions (EMPTY_QUESTIONS) and that a provider is registered
// (NO_PROVIDER); then validates the request and hands it to the provider,
// returning its answer or error.
func (s *Service) Ask(ctx context.Context, r Request) (Answer, error) {
	if err := ctx.Err(); err != nil {
		return Answer{}, Errorf(AskAborted, "ask: the caller withdrew before asking (%v)", err)
	}
	if len(r.Questions) == 0 {
		return Answer{}, Errorf(EmptyQuestions, "ask: the request has no questions")
	}
	s.mu.Lock()
	p := s.provider
	s.mu.Unlock()
	if p == nil {
		return Answer{}, Errorf(NoProvider, "ask: no provider is registered")
	}
	if err := Validate(r); err != nil {
		return Answer{}, err
	}
	return p.Ask(ctx, r)
}

// Checker is implemented by AskServices that check an ask as Create
// would before creating it: ValidateInput, then the rules of the chat
// surface the ask is put on (the syntax of its ids, what it can show). A
// front door that refuses bad asks before calling Create (the MCP tool)
// checks through it, so that every door refuses the same asks.
type Checker interface {
	CheckAsk(in AskInput) error
}

// CheckInput checks in as svc's Create would when svc is a Checker, else
// with ValidateInput alone.
func CheckInput(svc AskService, in AskInput) error {
	if c, ok := svc.(Checker); ok {
		return c.CheckAsk(in)
	}
	return ValidateInput(in)
}
