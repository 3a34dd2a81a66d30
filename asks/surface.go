package asks

import (
	"context"
	"errors"

	"github.com/slackask/slackask/store"
)

// Record is the durable record of an ask, as the lifecycle hands it to the
// chat surface (an alias, so that adapters need not import store).
type Record = store.Record

// Surface is the chat surface the lifecycle shows asks on: what it needs
// from a chat service, in its own terms. The Slack adapter (package bot)
// implements it; tests use an in-memory one. Methods are safe for
// concurrent use; they render records but never change them.
type Surface interface {
	// Home names the workspace and the app the surface acts for ("" while
	// unknown); asks are stamped with them so that a person's act from
	// elsewhere is refused.
	Home() (workspace, app string)
	// Post posts the message of rec in rec.Channel (as a reply in
	// rec.ThreadTS when set) and says where it landed.
	Post(ctx context.Context, rec Record) (Posted, error)
	// Update makes the posted message rec.Channel/rec.TS show rec.
	Update(ctx context.Context, rec Record) error
	// Remind posts rec's reminder in its thread, addressed to whoever may
	// answer it.
	Remind(ctx context.Context, rec Record) error
	// OpenDM opens the direct conversation with user and returns its id.
	OpenDM(ctx context.Context, user string) (conversation string, err error)
	// FindPosted looks for a message posted for rec since it was created
	// (a post that landed before a crash kept its ts from the record) and
	// returns its ts, or "" when there is none.
	FindPosted(ctx context.Context, rec Record) (ts string, err error)
	// InGroup reports whether user belongs to the responder group; an
	// error means it could not tell (the act is then refused).
	InGroup(ctx context.Context, group, user string) (bool, error)
	// Members lists the users of the user group (for an ask that waits
	// for every responder); an error means it could not tell.
	Members(ctx context.Context, group string) ([]string, error)
}

// Opener is implemented by a Surface that is not usable at once (the Slack
// adapter until auth.test answers): the lifecycle's background work waits
// for Opened to be closed, so that recovery never acts on a surface whose
// credentials may yet be refused (a refused post aborts its ask).
type Opener interface {
	Opened() <-chan struct{}
}

// Posted is where a message landed.
type Posted struct {
	Channel string // the conversation
	TS      string // the message
}

// ErrOutcomeUnknown marks a Post error after which the message may or may
// not exist: the call timed out or its connection broke after the request
// was sent. The lifecycle keeps the ask and looks for the message
// (FindPosted) before it ever posts it again. Every other Post error is a
// definite refusal: nothing was posted.
var ErrOutcomeUnknown = errors.New("the post's outcome is unknown")

// Permalinker is implemented by a Surface that can link to a posted
// message. The lifecycle asks once per message, right after the post, and
// stores the link in the ask (Ask.Permalink).
type Permalinker interface {
	Permalink(ctx context.Context, channel, ts string) (string, error)
}
