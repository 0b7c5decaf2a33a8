/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The HTML view's template, style and script (user/view/view_html.c), built into
 * the binary as NUL-terminated strings.  Paths are relative to the top of
 * the tree, where make runs.
 */
	.section .rodata
	.global html_page
	.type html_page, @object
html_page:
	.incbin "user/view/html/page.html"
	.byte 0
	.size html_page, . - html_page

	.global html_css
	.type html_css, @object
html_css:
	.incbin "user/view/html/view.css"
	.byte 0
	.size html_css, . - html_css

	.global html_js
	.type html_js, @object
html_js:
	.incbin "user/view/html/view.js"
	.byte 0
	.size html_js, . - html_js

	.section .note.GNU-stack, "", %progbits
