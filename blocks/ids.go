package blocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is what an interactive element of an ask does.
type Kind string

// The action kinds.
const (
	KindSelect  Kind = "select"  // the menu of a question, or the plan-review approve button
	KindOther   Kind = "other"   // "Other…" / "Answer…": opens OtherModal
	KindSkip    Kind = "skip"    // skips the question
	KindDetails Kind = "details" // opens DetailsModal
	KindSubmit  Kind = "submit"  // submits the whole ask
	KindCancel  Kind = "cancel"  // cancels the whole ask (after a confirm dialog)
	KindUse     Kind = "use"     // "Use as is": answers a free-text question with its proposed default
)

// Block kinds name the role of a block in a block_id; ParseBlockID returns
// them in Ref.Kind.
const (
	kindHead     Kind = "head"     // agent and mentions
	kindWho      Kind = "who"      // who may answer, deadline
	kindQuestion Kind = "question" // question text
	kindControls Kind = "controls" // actions of a question, or the bottom bar (-1)
	kindRow      Kind = "row"      // a row of a question's option buttons before its controls (Item: row + 1)
	kindProgress Kind = "progress" // what was done so far on a question
	kindProposed Kind = "proposed" // a free-text question's proposed default, while nothing was done on it
	kindDivider  Kind = "divider"  // between questions
	kindAnswer   Kind = "answer"   // the answer of an ended ask
	kindOutcome  Kind = "outcome"  // how the ask ended
)

// ErrNotOurs is wrapped by the errors of ParseActionID and ParseBlockID (and
// LabelsFromAction) for ids that this package did not make.
var ErrNotOurs = errors.New("blocks: not a slackask id")

// Ref identifies an element or block of one revision of an ask's message.
type Ref struct {
	AskID    string // [A-Za-z0-9_-], 1–40 bytes
	Rev      int    // >= 0
	Question int    // question index, or -1 for ask-wide parts
	Kind     Kind
	// Item, when not 0, is the 1-based number of one of several elements
	// or blocks of the same kind of a question: an element per option (its
	// option index + 1), a row of them (its row + 1). Slack wants the ids
	// of a block's elements distinct.
	Item int
}

const (
	idPrefix   = "sa"
	idSep      = "."
	maxAskID   = 40
	maxSlackID = 255 // block_id and action_id
)

// ActionID returns the action_id of the element r names:
// "sa.<AskID>.<Rev>.<Question>.<Kind>", with ".<Item>" when Item is not 0.
// Block ids are built the same way with block kinds. For a Ref with a
// valid AskID (see Ref), Rev >= 0, Question >= -1 and Item >= 0 the id is
// at most 255 bytes and ParseActionID returns r.
func ActionID(r Ref) string {
	id := strings.Join([]string{
		idPrefix, r.AskID, strconv.Itoa(r.Rev), strconv.Itoa(r.Question), string(r.Kind),
	}, idSep)
	if r.Item != 0 {
		id += idSep + strconv.Itoa(r.Item)
	}
	return id
}

// blockID returns the block_id of the block of kind k for question q.
func blockID(v View, q int, k Kind) string {
	return ActionID(Ref{AskID: v.AskID, Rev: v.Rev, Question: q, Kind: k})
}

// ParseActionID parses an action_id made by ActionID with one of the action
// kinds. Any other string, including non-canonical spellings of the numbers,
// yields an error wrapping ErrNotOurs. It never panics.
func ParseActionID(s string) (Ref, error) { return parseID(s, isActionKind) }

// ParseBlockID parses a block_id of a message made by Message. Ref.Kind is
// then a block kind: "head", "who", "question", "controls" (the actions
// block of a question, which holds its select, or with Question -1 the
// Submit/Cancel bar), "progress", "divider", "answer" or "outcome". Any
// other string yields an error wrapping ErrNotOurs. It never panics.
func ParseBlockID(s string) (Ref, error) { return parseID(s, isBlockKind) }

// MessageRef returns the Ref of the first of a posted message's blocks
// (Slack's JSON array) whose block_id ParseBlockID takes: the ask it
// belongs to and the revision it renders. ok is false when none is ours or
// the blocks do not decode.
func MessageRef(blocksJSON []byte) (r Ref, ok bool) {
	var bs []struct {
		BlockID string `json:"block_id"`
	}
	if json.Unmarshal(blocksJSON, &bs) != nil {
		return Ref{}, false
	}
	for _, b := range bs {
		if r, err := ParseBlockID(b.BlockID); err == nil {
			return r, true
		}
	}
	return Ref{}, false
}

// MessageAskID returns the ask a posted message belongs to (MessageRef);
// "" when none of its blocks is ours.
func MessageAskID(blocksJSON []byte) string {
	r, _ := MessageRef(blocksJSON)
	return r.AskID
}

func isActionKind(k Kind) bool {
	switch k {
	case KindSelect, KindOther, KindSkip, KindDetails, KindSubmit, KindCancel, KindHandoff, KindAnswerForm, KindUse:
		return true
	}
	return false
}

func isBlockKind(k Kind) bool {
	switch k {
	case kindHead, kindWho, kindQuestion, kindControls, kindRow, kindProgress, kindProposed, kindDivider, kindAnswer, kindOutcome, kindTeam, kindTally:
		return true
	}
	return false
}

func parseID(s string, kindOK func(Kind) bool) (Ref, error) {
	if len(s) > maxSlackID {
		return Ref{}, notOurs(s, "too long")
	}
	parts := strings.Split(s, idSep)
	if len(parts) != 5 && len(parts) != 6 || parts[0] != idPrefix {
		return Ref{}, notOurs(s, "wrong shape")
	}
	if !validAskID(parts[1]) {
		return Ref{}, notOurs(s, "bad ask id")
	}
	rev, err1 := strconv.Atoi(parts[2])
	q, err2 := strconv.Atoi(parts[3])
	if err1 != nil || err2 != nil || rev < 0 || q < -1 {
		return Ref{}, notOurs(s, "bad number")
	}
	r := Ref{AskID: parts[1], Rev: rev, Question: q, Kind: Kind(parts[4])}
	if len(parts) == 6 {
		if r.Item, err1 = strconv.Atoi(parts[5]); err1 != nil || r.Item < 1 {
			return Ref{}, notOurs(s, "bad item")
		}
	}
	if !kindOK(r.Kind) {
		return Ref{}, notOurs(s, "unknown kind")
	}
	if ActionID(r) != s {
		return Ref{}, notOurs(s, "not canonical")
	}
	return r, nil
}

func notOurs(s, why string) error {
	return fmt.Errorf("%w: %s: %.64q", ErrNotOurs, why, s)
}

// validAskID reports whether id is 1–40 bytes of [A-Za-z0-9_-].
func validAskID(id string) bool {
	if id == "" || len(id) > maxAskID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}
