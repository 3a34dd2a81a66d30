package slackfake

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Finder picks an element of a message or modal. It gets the block_id, the
// action_id and a copy of the element's JSON object. It runs while the fake
// is locked, so it must not call Server or Person methods.
type Finder func(blockID, actionID string, element map[string]any) bool

// Errors of element look-ups.
var (
	// ErrNoMatch: no element of the wanted kind matched the Finder.
	ErrNoMatch = errors.New("slackfake: no element matches")
	// ErrAmbiguous: more than one element matched the Finder.
	ErrAmbiguous = errors.New("slackfake: more than one element matches")
)

// ByActionID matches the element whose action_id is id.
func ByActionID(id string) Finder {
	return func(_, actionID string, _ map[string]any) bool { return actionID == id }
}

// ByActionPrefix matches elements whose action_id starts with prefix.
func ByActionPrefix(prefix string) Finder {
	return func(_, actionID string, _ map[string]any) bool { return strings.HasPrefix(actionID, prefix) }
}

// ByActionContains matches elements whose action_id contains substr.
func ByActionContains(substr string) Finder {
	return func(_, actionID string, _ map[string]any) bool { return strings.Contains(actionID, substr) }
}

// ByBlockID matches the elements of the block whose block_id is id.
func ByBlockID(id string) Finder {
	return func(blockID, _ string, _ map[string]any) bool { return blockID == id }
}

// ByText matches a button by its text or a select or input by its
// placeholder.
func ByText(text string) Finder {
	return func(_, _ string, el map[string]any) bool {
		return textOf(el, "text") == text || textOf(el, "placeholder") == text
	}
}

// And matches when every finder matches (and always with none).
func And(finders ...Finder) Finder {
	return func(blockID, actionID string, el map[string]any) bool {
		for _, f := range finders {
			if f != nil && !f(blockID, actionID, el) {
				return false
			}
		}
		return true
	}
}

// findElement returns the one element of one of kinds that find matches
// (a nil find matches all).
func findElement(blocks []any, kinds []string, find Finder, what string) (elemRef, error) {
	var matches []elemRef
	var seen []string
	for _, b := range blocks {
		bm, ok := asObj(b)
		if !ok {
			continue
		}
		for _, el := range blockElements(bm) {
			if !slices.Contains(kinds, getStr(el.m, "type")) {
				continue
			}
			aid := getStr(el.m, "action_id")
			seen = append(seen, describe(el))
			if find == nil || find(el.blockID, aid, cloneJSON(el.m).(map[string]any)) {
				matches = append(matches, el)
			}
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return elemRef{}, fmt.Errorf("%w: no %s matches among [%s]", ErrNoMatch, what, strings.Join(seen, ", "))
	default:
		var names []string
		for _, m := range matches {
			names = append(names, describe(m))
		}
		return elemRef{}, fmt.Errorf("%w: %d %ss match: [%s]", ErrAmbiguous, len(matches), what, strings.Join(names, ", "))
	}
}

func describe(el elemRef) string {
	label := cmpOr(textOf(el.m, "text"), textOf(el.m, "placeholder"))
	return fmt.Sprintf("%s %s/%s %q", getStr(el.m, "type"), el.blockID, getStr(el.m, "action_id"), label)
}
