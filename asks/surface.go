package asks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// Record is the durable record of an ask, as the lifecycle hands it to the
// chat surface (an alias, so that adapters need not import store).
type Record = store.Record

// Copy is one further view of an ask (store.Copy).
type Copy = store.Copy

// Surface is the chat surface the lifecycle shows asks on: what it needs
// from a chat service, in its own terms. The Slack adapter (package bot)
// implements it; tests use an in-memory one. Methods are safe for
// concurrent use; they render records but never change them.
type Surface interface {
	// Home names the workspace and the app the surface acts for ("" while
	// unknown); asks are stamped with them so that a person's act from
	// elsewhere is refused.
	Home() (workspace, app string)
	// Post posts the main message of rec where the ask says (its
	// conversation, thread, or the direct conversation with rec.User) and
	// says where it landed (Ref set).
	Post(ctx context.Context, rec Record) (Posted, error)
	// Update makes the posted main message of rec show rec. A rate
	// limit is *RateLimited, and the surface does not send rec again
	// after the pause: by then another replica may have drawn a newer
	// state of the ask, which rec would draw over; the lifecycle waits
	// and renders the record as it then stands.
	Update(ctx context.Context, rec Record) error
	// Remind posts rec's reminder in its thread, addressed to whoever may
	// answer it.
	Remind(ctx context.Context, rec Record) error
	// FindPosted looks for a main message posted for rec since it was
	// created (a post that landed before a crash kept its place from the
	// record) and says where it is (Ref "" when there is none).
	FindPosted(ctx context.Context, rec Record) (Posted, error)
	// PostCopy posts a copy of rec's message as c says (a direct message
	// to c.For, or a message in c.In) and says where it landed (Ref set).
	// Errors as for Post (RateLimited,
	// ErrOutcomeUnknown, else a definite refusal).
	PostCopy(ctx context.Context, rec Record, c Copy) (Posted, error)
	// UpdateCopy makes the posted copy c (c.Ref) show rec. Errors as
	// Update's.
	UpdateCopy(ctx context.Context, rec Record, c Copy) error
	// FindCopy looks for a copy c of rec posted since rec was created (a
	// post that landed before a crash kept its reference from the record)
	// and says where it is (Ref "" when there is none).
	FindCopy(ctx context.Context, rec Record, c Copy) (Posted, error)
	// InGroup reports whether user belongs to the responder group of
	// workspace (the ask's Record.TeamID); an error means it could not
	// tell (the act is then refused).
	InGroup(ctx context.Context, workspace, group, user string) (bool, error)
	// Members lists the users of the user group of workspace (for an ask
	// that waits for every responder); an error means it could not tell.
	Members(ctx context.Context, workspace, group string) ([]string, error)
	// IsGroup reports whether id, as a request names who may answer or
	// who is mentioned, names a group of people (InGroup, Members) rather
	// than a person. The lifecycle never reads ids itself.
	IsGroup(id string) bool
}

// Checker is implemented by a Surface with rules of its own for what an
// ask may say (the syntax of its ids, what it can show): Create calls
// CheckAsk after interaction.ValidateInput and before anything else, and
// refuses the ask with its error (an *interaction.Error).
type Checker interface {
	CheckAsk(in interaction.AskInput) error
}

// Workspaces is implemented by a surface that serves many workspaces
// (the Slack adapter with OAuth installs): Home names none, and each ask
// is stamped with the workspace Workspace resolves the one it names to.
type Workspaces interface {
	// Workspace returns the key and app an ask naming ws is stamped with
	// (Record.TeamID, Record.AppID: the installation serving ws), and the
	// workspace the ask is posted in when ws says which
	// (Record.Workspace: the key itself for a workspace's own
	// installation, ws when it names one workspace of those an
	// installation of several serves, "" when it names all of them), or
	// a coded error: ws names no workspace the surface is installed in,
	// or is "" when it must be named. The surface routes the ask's calls
	// by the key. ErrHome says the surface serves one workspace after
	// all (Home's).
	Workspace(ctx context.Context, ws string) (key, workspace, app string, err error)
}

// ErrHome is a Workspaces error: the surface serves one workspace, its
// Home, which stamps every ask.
var ErrHome = errors.New("the surface serves its home workspace only")

// Opener is implemented by a Surface that is not usable at once (the Slack
// adapter until auth.test answers): the lifecycle's background work waits
// for Opened to be closed, so that recovery never acts on a surface whose
// credentials may yet be refused (a refused post aborts its ask).
type Opener interface {
	Opened() <-chan struct{}
}

// Posted is where a view of an ask landed, as the surface names it.
// Channel and TS name the place for people (the resource's channel/ts of
// the main message; the audit trail's posted events), and Ref is the
// view's reference, which acts name (Act.Ref): the lifecycle passes them on
// and compares references, never reading any of them.
type Posted struct {
	Channel string // the conversation
	TS      string // the message
	Ref     string // the view's reference (Record.Ref, Copy.Ref)
}

// ErrOutcomeUnknown marks a Post error after which the message may or may
// not exist: the call timed out or its connection broke after the request
// was sent. The lifecycle keeps the ask and looks for the message
// (FindPosted) before it ever posts it again. Every other Post error is a
// definite refusal: nothing was posted.
var ErrOutcomeUnknown = errors.New("the post's outcome is unknown")

// RateLimited is a Post, PostCopy, Update or UpdateCopy error: the surface
// refused the call for its rate limit (nothing was posted or drawn) and
// takes it again after RetryAfter. A rate limit never fails an ask: the
// lifecycle queues a post (Ask.Posting "queued") and posts it when the
// conversation's turn comes, and renders an update again after the pause
// from the record as it then stands.
type RateLimited struct {
	RetryAfter time.Duration
}

func (e *RateLimited) Error() string {
	return fmt.Sprintf("rate limited: retry after %v", e.RetryAfter)
}

// ErrMessageGone marks an Update (or UpdateCopy) error that says the
// message is not there any more (deleted, or its conversation gone, as
// after a dev emulator restart on a kept database): retrying cannot bring
// it back, so the lifecycle stops updating it and the ask keeps its
// outcome.
var ErrMessageGone = errors.New("the message is gone")

// Permalinker is implemented by a Surface that can link to a posted
// message. The lifecycle asks once per message, right after the post, and
// stores the link in the ask (Ask.Permalink). rec is the ask (its
// workspace) whose message at is.
type Permalinker interface {
	Permalink(ctx context.Context, rec Record, at Posted) (string, error)
}

// Referrer is implemented by a Surface whose asks were posted before
// records kept their main message's reference (Record.Ref): it gives that
// reference from what such a record kept.
type Referrer interface {
	MainRef(rec Record) string
}
