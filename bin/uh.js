#!/usr/bin/env node
import '../dist/src/producers/cli/main.js';
