package reference

// An intended difference: where berth answers otherwise than the Rivet engine on purpose. A
// step whose values differ is accepted only when an entry names its scenario and step and
// holds both whole values exactly; an entry that matches nothing in a run fails the run
// (the behaviour changed and the table must say so). docs/compat.md publishes the table
// (TestCompatDoc keeps it in step).
type intendedDifference struct {
	Scenario, Step   string
	Reference, Berth string // the step's values, canonical JSON as the transcripts hold them
	// Behaviour says in a few words what is observed; Why, why berth differs.
	Behaviour, Why string
}

var differences = []intendedDifference{
	{
		Scenario: "paging_actors", Step: "actors by key page 2",
		Reference: `{"items":["<id 2>"],"pagination":{"cursor":"<cursor>"}}`,
		Berth:     `{"items":[],"pagination":{"cursor":null}}`,
		Behaviour: "GET /actors by name and key, the page after the key's actor",
		Why:       "the reference's cursor does not move past the key's actor, so a client paging by cursor gets that page for ever; berth ends the listing with an empty page, as every other list does",
	},
	{
		Scenario: "paging_actors", Step: "actors cursor garbage",
		Reference: `{"error":"core.internal_error","message":true,"status":500}`,
		Berth:     `{"error":"api.bad_request","message":true,"status":400}`,
		Behaviour: "GET /actors with a cursor that is not one",
		Why:       "a malformed input is the client's error: 400 naming the field, not a 500",
	},
	{
		Scenario: "paging_actors", Step: "actors cursor 99999999999999999999",
		Reference: `{"error":"core.internal_error","message":true,"status":500}`,
		Berth:     `{"error":"api.bad_request","message":true,"status":400}`,
		Behaviour: "GET /actors with a create_ts cursor out of range",
		Why:       "a malformed input is the client's error: 400 naming the field, not a 500",
	},
	{
		Scenario: "paging_runners", Step: "runners cursor garbage",
		Reference: `{"error":"core.internal_error","message":true,"status":500}`,
		Berth:     `{"error":"api.bad_request","message":true,"status":400}`,
		Behaviour: "GET /runners with a cursor that is not one",
		Why:       "a malformed input is the client's error: 400 naming the field, not a 500",
	},
}

// intended returns the index of the entry that holds d, if one does.
func intended(scenario string, d StepDiff) (int, bool) {
	for i, e := range differences {
		if e.Scenario == scenario && e.Step == d.Step && e.Reference == d.Reference && e.Berth == d.Got {
			return i, true
		}
	}
	return 0, false
}
