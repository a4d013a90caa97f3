#!/usr/bin/env node
import "../dist/cli/young-generation.js"
import "../dist/bundle/main.js"
