package testutil

// The checks every rate limiting middleware of the module makes: httplimit,
// shmfiber and shmfasthttp run the same requests through their own
// frameworks.

// CostStep is one request of a cost check. It has the cost it names in its
// X-Cost header, and the HTTP status it must get.
type CostStep struct {
	Cost   string
	Status int
}

// CostSteps go through a GCRA with a burst of 10 whose clock stands still.
// Costs 4, 4 and 2 are admitted. A third 4 is not, nor a 1 after them. A
// cost of 0 is ErrBadCost. It and a cost that does not parse go to the
// middleware's Error. The check makes Error answer 400.
var CostSteps = []CostStep{
	{"4", 200},
	{"4", 200},
	{"4", 429},
	{"2", 200},
	{"1", 429},
	{"0", 400},
	{"many", 400},
}

// TierPlan is a tier of a tier check. Plan is what a request names in its
// X-Plan header, or "" for the middleware's own limiter. The tier has a
// limit, and the policy name its headers must give.
type TierPlan struct {
	Plan   string
	Limit  int
	Policy string
}

// TierPlans are a free plan of 2 requests, the middleware's own limiter,
// and a paid tier of 5.
var TierPlans = []TierPlan{
	{"", 2, "free"},
	{"paid", 5, "paid"},
}
