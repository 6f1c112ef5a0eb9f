/* Error messages without stdio: a tiny builder that writes into kann_error.message, so the
 * validators and the freestanding runtime core can report what is wrong. */
#ifndef KANN_MSG_H
#define KANN_MSG_H

#include <stdint.h>

#include "kann.h"

/* Every function accepts err == NULL and does nothing then; text that does not fit is cut. */

/* Sets err->status to s and the message to text; returns s so callers can `return` it. */
kann_status kann_msg_set(kann_error *err, kann_status s, const char *text);
/* Appends text, or an unsigned decimal number, to the message. */
void kann_msg_append(kann_error *err, const char *text);
void kann_msg_append_u64(kann_error *err, uint64_t value);

#endif
