"""A policy run on a query set and scored (`star eval-agent`), and two such evaluations paired (`star compare`)."""
