module github.com/floodgate/floodgate

go 1.25.0

require (
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	golang.org/x/time v0.12.0 // indirect
)
