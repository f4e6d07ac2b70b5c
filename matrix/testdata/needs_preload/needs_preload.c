/*
 * abtest test extension: like pg_cron, its library refuses to load
 * anywhere but from shared_preload_libraries, with pg_cron's words.
 */
#include "postgres.h"
#include "fmgr.h"
#include "miscadmin.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

PG_FUNCTION_INFO_V1(needs_preload_ping);

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errmsg("needs_preload can only be loaded via shared_preload_libraries"),
				 errhint("Add needs_preload to the shared_preload_libraries configuration variable in postgresql.conf.")));
}

Datum
needs_preload_ping(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(1);
}
