package interaction

// Progress is what a person has done so far on one question of a pending
// ask: the labels chosen, the "Other" text typed, or a skip. At most one of
// the three is set: the latest action replaces the others.
type Progress struct {
	Selected []string `json:"selected,omitempty"`
	Custom   string   `json:"custom,omitempty"`
	Skipped  bool     `json:"skipped,omitempty"`
	// Note is the "Why?" given with Selected (an option that asks for one).
	Note string `json:"note,omitempty"`
}

// Touched reports whether the person acted on the question at all.
func (p Progress) Touched() bool { return len(p.Selected) > 0 || p.Custom != "" || p.Skipped }

// AnswerFrom builds the answer to r from per-question progress (indexed as
// r.Questions; missing entries count as skipped). Custom text wins over
// labels, as the seam says.
func AnswerFrom(r Request, progress []Progress) Answer {
	ans := Answer{Answers: make([]AnswerItem, len(r.Questions))}
	for i, q := range r.Questions {
		item := AnswerItem{ID: q.ID, Selected: []string{}}
		if i < len(progress) {
			p := progress[i]
			switch {
			case p.Custom != "":
				item.Custom = p.Custom
			case !p.Skipped:
				item.Selected = append(item.Selected, p.Selected...)
				if len(p.Selected) > 0 {
					item.Note = p.Note
				}
			}
		}
		ans.Answers[i] = item
	}
	return ans
}
