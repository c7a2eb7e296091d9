/**
 * The commands and files the user's pages show (README.md, docs/): each fenced block is run by a test, checked to be
 * what a tier runs, or marked as an example with the reason it cannot run here ({@code DocsCommandsUnitTest}). Test
 * code only; it uses the client package's commands as an operator runs them.
 */
package dev.blocknode.docs;
