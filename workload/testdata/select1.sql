-- select1: baseline overhead, no eviction
SELECT 1;
