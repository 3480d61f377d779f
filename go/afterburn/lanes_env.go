package afterburn

import "strings"

// The lane variables of PROTOCOL.md §2.3 and §2.5 and the preference of §2.5 "Offered
// lanes": what they say, checked before any descriptor is touched.

// laneEnv is what AFTERBURN_STREAM_FDS and AFTERBURN_STREAM_CANCEL_FD say, or under
// lanes=auto AFTERBURN_STREAM_OFFER_FDS and AFTERBURN_STREAM_OFFER_CANCEL_FD.
type laneEnv struct {
	pairs   [][2]int // request and response descriptors of lanes 2 to K
	cancel  int      // the cancel pipe's read end; -1 without
	offered bool     // the lanes are an offer (§2.5 "Offered lanes")
}

// The variables of lanes given (-lanes K) and of lanes offered (lanes=auto), §2.3.
const (
	givenFDsVar      = "AFTERBURN_STREAM_FDS"
	givenCancelVar   = "AFTERBURN_STREAM_CANCEL_FD"
	offeredFDsVar    = "AFTERBURN_STREAM_OFFER_FDS"
	offeredCancelVar = "AFTERBURN_STREAM_OFFER_CANCEL_FD"
)

// varNames are the variables that name le's descriptors, for messages.
func (le laneEnv) varNames() (fds, cancel string) {
	if le.offered {
		return offeredFDsVar, offeredCancelVar
	}
	return givenFDsVar, givenCancelVar
}

// laneEnvFrom reads the lane variables (PROTOCOL.md §2.5). Absent variables mean one
// lane and no cancel pipe: exactly the worker of before lanes. A malformed value is
// an error, not a guess, as for AFTERBURN_FDS (§2.3); so are lanes both given and
// offered, which no watchdog sets, and a descriptor named twice (or also named by
// AFTERBURN_FDS), which would have two lanes share a pipe or a lane closed under
// another. Descriptors 0 to 2 are refused: lanes need fd mode, and stdin, stdout and
// stderr are never a lane.
func laneEnvFrom(lookup func(string) (string, bool)) (laneEnv, error) {
	le := laneEnv{cancel: -1}
	_, givenFDs := lookup(givenFDsVar)
	_, givenCancel := lookup(givenCancelVar)
	_, offeredFDs := lookup(offeredFDsVar)
	_, offeredCancel := lookup(offeredCancelVar)
	if offeredFDs || offeredCancel {
		if givenFDs || givenCancel {
			return le, &envErr{"afterburn: both " + givenFDsVar + " or " + givenCancelVar + " and " + offeredFDsVar + " or " + offeredCancelVar +
				" in environment (want lanes given by -lanes or offered by lanes=auto, not both: PROTOCOL.md §2.5)"}
		}
		le.offered = true
	}
	fdsVar, cancelVar := le.varNames()
	const wantPairs = `request and response descriptors of each lane after the first, like "5,6,7,8"`
	named := map[int]bool{}
	if v, ok := lookup("AFTERBURN_FDS"); ok {
		if in, out, err := parseFDs(v); err == nil { // a bad one is protocolFDs' to report
			named[in], named[out] = true, true
		}
	}
	if v, ok := lookup(fdsVar); ok {
		parts := strings.Split(v, ",")
		if len(parts)%2 != 0 {
			return le, envError(fdsVar, v, wantPairs)
		}
		fds := make([]int, len(parts))
		for i, p := range parts {
			fd, ok := parseDescriptor(p)
			if !ok {
				return le, envError(fdsVar, v, wantPairs)
			}
			if named[fd] {
				return le, envError(fdsVar, v, wantPairs+", each descriptor once and none of AFTERBURN_FDS")
			}
			named[fd] = true
			fds[i] = fd
		}
		for i := 0; i < len(fds); i += 2 {
			le.pairs = append(le.pairs, [2]int{fds[i], fds[i+1]})
		}
	}
	if v, ok := lookup(cancelVar); ok {
		fd, ok := parseDescriptor(v)
		if !ok {
			return le, envError(cancelVar, v, `one descriptor, like "9"`)
		}
		if named[fd] {
			return le, envError(cancelVar, v, "a descriptor that no lane uses")
		}
		le.cancel = fd
	}
	return le, nil
}

// preferredLanesFrom returns the lanes to prefer when offered some: the value of
// preferredLanesEnv when it is set, else fromCode (PreferredLanes). A malformed value
// is an error, set or not offered: it is a mistake the operator should hear of.
func preferredLanesFrom(lookup func(string) (string, bool), fromCode int) (int, error) {
	v, ok := lookup(preferredLanesEnv)
	if !ok {
		return fromCode, nil
	}
	n, ok := parseDigits([]byte(v))
	if !ok || n < 1 || n > 1<<30 {
		return 0, envError(preferredLanesEnv, v, "a number of lanes, at least 1")
	}
	return int(n), nil
}

// lanesInUse is L of PROTOCOL.md §2.5, what both sides serve: min(K, N) of lanes
// given, min(K, N, P) of lanes offered, N being maxLanes and P preferred.
func (le laneEnv) lanesInUse(maxLanes, preferred int) int {
	l := min(1+len(le.pairs), maxLanes)
	if le.offered {
		l = min(l, preferred)
	}
	return l
}

// preferredAnswer is the AfterBurn-Streams-Preferred value the handshake carries: P,
// at most N (§2.5), and only in answer to an offer (0: no field).
func (le laneEnv) preferredAnswer(maxLanes, preferred int) int {
	if !le.offered {
		return 0
	}
	return min(preferred, maxLanes)
}

// parseDescriptor parses one decimal descriptor above 2.
func parseDescriptor(s string) (int, bool) {
	n, ok := parseDigits([]byte(s))
	if !ok || n < 3 || n > 1<<30 {
		return 0, false
	}
	return int(n), true
}
