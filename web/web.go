// Package web holds the dashboard of `ironvise serve`
// (docs/design/api.md#dashboard): plain HTML, CSS and JavaScript with no
// build step and no external assets. The server inlines the three files into
// one self-contained page.
//
// # Limitations
//
// The page needs a browser with fetch, EventSource and ES2017; it stores
// the token in sessionStorage only.
package web

import _ "embed"

// Index is the page skeleton; the server replaces the markers
// /*STYLE*/ and /*SCRIPT*/ with Style and Script.
//
//go:embed index.html
var Index string

// Style is the page's CSS.
//
//go:embed style.css
var Style string

// Script is the page's JavaScript.
//
//go:embed app.js
var Script string
