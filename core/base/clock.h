/* clock.h — the one monotonic clock: seconds since some fixed point
 * (CLOCK_MONOTONIC), for deadlines, durations and budgets in every floor. */
#ifndef LUAMCP_CLOCK_H
#define LUAMCP_CLOCK_H

double clock_now(void);

#endif
