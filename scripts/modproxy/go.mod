module github.com/crewgo/crew/scripts/modproxy

go 1.26.0

require golang.org/x/mod v0.41.0
