package check

import (
	"fmt"
	"strconv"
	"time"
)

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// dur prints a duration rounded for people.
func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Microsecond).String()
	}
	return fmt.Sprint(d)
}
